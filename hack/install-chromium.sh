#!/usr/bin/env bash
# Installs headless Chromium (the Debian package) for the deploy plane's page test
# (e2e TestDeployPlaneUI), which loads /v1/deploy/ui/ and takes a screenshot. Idempotent:
# does nothing when chromium is already on PATH. Needs root (apt-get), as on CI.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  echo "chromium: $(command -v chromium)"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "chromium: $(command -v chromium)"
