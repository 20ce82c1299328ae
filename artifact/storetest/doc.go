// Package storetest runs a real S3 server (versitygw, from the pinned test
// binaries) on a free loopback port with freshly generated credentials,
// for tests of seed generations against real object storage.
//
// The credentials are handed to versitygw through its environment, never
// on its command line, and the tests that use them assert that they never
// reach any output hactl produces.
package storetest
