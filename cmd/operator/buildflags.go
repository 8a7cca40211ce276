package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/openuniverse/operator/kinds"
)

// bindBuildFlags binds what every Kind's build reads beyond the CR (kinds.Context's
// AllowUnverifiedSeed and StaticServerImage) to fs. `operator run`, `render`, `diff` and
// `deploy-plane` bind the same flags with the same defaults, so a review (render, diff, the
// plane's live diff) builds what run applies when given run's settings.
func bindBuildFlags(fs *pflag.FlagSet, c *kinds.Context) {
	fs.BoolVar(&c.AllowUnverifiedSeed, "allow-unverified-seed", false, "Let a LuxNetwork's seed restore unpack an archive with neither expectedHash nor a published <url>.sha256, into an empty data dir only; without it such a restore stops the pod.")
	fs.StringVar(&c.StaticServerImage, "static-server-image", kinds.DefaultStaticServerImage, "Pinned image (a tag other than latest, or a digest) serving a Static's spec.configMap.")
}

// validateBuild refuses build settings no build may use (an unpinned static server image).
func validateBuild(c kinds.Context) error {
	if err := kinds.ValidateStaticServerImage(c.StaticServerImage); err != nil {
		return fmt.Errorf("--static-server-image: %w", err)
	}
	return nil
}
