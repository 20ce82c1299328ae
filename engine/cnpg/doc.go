// Package cnpg is hactl's engine for CloudNativePG clusters: PostgreSQL
// instances run by CloudNativePG's instance manager, with no Patroni and
// no StatefulSet (the operator's Cluster owns each instance's pod).
//
// Each instance is read on its own from its instance manager's
// unauthenticated GET :8000/pg/status, through the API server's pod
// proxy as `kubectl cnpg status` reads it (engine.ProbeOptions.ProxyGet),
// else through the engine's DialFunc. The package holds the decoder that
// recognises the instance manager's container, the view of its facts,
// and the verdict rules: the one writable primary and its current WAL
// position as the frontier, each replica's replay lag in bytes, the
// Cluster's own word (its phase, currentPrimary and targetPrimary)
// against what the instances say, and the two field reports hactl
// exists to catch (a Cluster that says it is healthy while no instance
// runs, cloudnative-pg#5150; a switchover target that has not replayed
// what it received, cloudnative-pg#11110).
//
// It imports engine and model only.
package cnpg
