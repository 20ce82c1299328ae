// Package fault names the faults the sandbox can inject into a member of a
// sandbox HA cluster (stop, pause, wipe, rebootstrap, isolate, ...), for
// end-to-end tests and demos. It holds only the vocabulary; the runner and
// the sandbox carry the faults out.
package fault
