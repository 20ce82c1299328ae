package artifact

// StatefulSet annotations that configure a cluster's seed store (see
// docs/seed-generations.md). Flags override them.
const (
	// AnnotationStore holds the store URL of the cluster's generations.
	AnnotationStore = "hactl.dev/seed-store"
	// AnnotationStoreSecret names a Secret in the cluster's namespace
	// holding the store credentials, keys per store scheme
	// (CredentialsFromSecret): AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
	// optional AWS_SESSION_TOKEN (s3://); GOOGLE_APPLICATION_CREDENTIALS_JSON
	// (gs://); AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or
	// AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_CONNECTION_STRING
	// (azblob://).
	AnnotationStoreSecret = "hactl.dev/seed-store-secret"
)
