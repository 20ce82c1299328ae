package artifact

// SetCrashHook makes Restore call f at each of its crash points (see
// crashPoint) and returns a function that undoes it.
func SetCrashHook(f func(point string)) (undo func()) {
	old := crashHook
	crashHook = f
	return func() { crashHook = old }
}

// SetFreeSpace makes Restore see f's answer as the free space of the data
// directory's file system and returns a function that undoes it.
func SetFreeSpace(f func(dir string) (int64, error)) (undo func()) {
	old := freeSpace
	freeSpace = f
	return func() { freeSpace = old }
}

// CredentialSecrets is what a Store scrubs from errors for c.
func CredentialSecrets(c *Credentials) []string { return c.secrets() }
