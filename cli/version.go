package cli

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/hactl-dev/hactl/internal/buildinfo"
)

// VersionInfo is what `version -o json` prints.
type VersionInfo struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// VersionOptions holds the flags of `kubectl hactl version`.
type VersionOptions struct {
	Output string
	genericiooptions.IOStreams
}

// NewCmdVersion builds `kubectl hactl version`.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	o := &VersionOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the hactl version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: '' or json")
	return cmd
}

// Validate checks the output format.
func (o *VersionOptions) Validate() error {
	if o.Output != "" && o.Output != "json" {
		return usageError("--output must be 'json' or empty, got %q", o.Output)
	}
	return nil
}

// Run prints the version.
func (o *VersionOptions) Run() error {
	v := VersionInfo{
		Version:   buildinfo.Version,
		GitCommit: buildinfo.Commit,
		BuildDate: buildinfo.Date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if o.Output == "json" {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	_, err := fmt.Fprintf(o.Out, "hactl %s (commit %s, built %s, %s, %s)\n",
		v.Version, v.GitCommit, v.BuildDate, v.GoVersion, v.Platform)
	return err
}
