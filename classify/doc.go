// Package classify holds hactl's pure decisions: how a StatefulSet's pods
// bootstrap on an empty volume (its Shape) and, for actions, what to do
// about one member. It imports only the standard library and package model:
// no client, no clock, no logging, so every rule is a table test.
package classify
