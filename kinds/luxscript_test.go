package kinds_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/openuniverse/operator/kinds"
	"github.com/openuniverse/operator/kinds/luxnetwork"
	v1 "github.com/openuniverse/operator/kinds/v1"
)

// tarGz is an archive holding db/000001.log.
func tarGz(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	body := []byte("chain data")
	if err := tw.WriteHeader(&tar.Header{Name: "db/000001.log", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// initScript builds a LuxRuntime and returns the shell script of its init container name.
func initScript(t *testing.T, s v1.LuxRuntimeSpec, name string) string {
	t.Helper()
	objs, err := buildLuxRuntimeSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range podSpec(t, findKind(t, objs, "StatefulSet")).InitContainers {
		if c.Name == name {
			return c.Command[2]
		}
	}
	t.Fatalf("no init container %s", name)
	return ""
}

// runScript runs a generated script with /data (and /plugins) moved under dir, as the pod
// would with its volumes mounted there.
func runScript(t *testing.T, script, dir string, env ...string) (string, error) {
	t.Helper()
	script = strings.ReplaceAll(script, "'/data", "'"+dir+"/data")
	script = strings.ReplaceAll(script, "'/plugins'", "'"+dir+"/plugins'")
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSeedRestoreScript runs the seed-restore init container's script against an HTTP server
// holding a seed archive: it unpacks only an archive matching expectedHash, tries the next
// source on a mismatch, stops the pod when none matches, and never downloads into (or
// touches) a data dir that already holds data.
func TestSeedRestoreScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl, sha256sum and tar, as the node image has")
	}
	archive := tarGz(t)
	sum := sha256.Sum256(archive)
	good := hex.EncodeToString(sum[:])
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path == "/tampered.tar.gz" {
			_, _ = w.Write(append([]byte{}, archive[:len(archive)-1]...))
			return
		}
		_, _ = w.Write(archive)
	}))
	defer srv.Close()
	spec := func(sources ...v1.SeedSource) v1.LuxRuntimeSpec {
		return v1.LuxRuntimeSpec{NetworkID: 1, Image: imageOf("r", "v1"), Storage: &v1.StorageSpec{Size: resource.MustParse("1Gi")},
			SeedRestore: &v1.SeedRestore{Enabled: true, Sources: sources}}
	}
	bad := strings.Repeat("0", 64)
	cases := map[string]struct {
		sources      []v1.SeedSource
		existing     bool
		wantErr      bool
		wantRestored bool
		wantRequests int32
	}{
		"verified archive is unpacked": {sources: []v1.SeedSource{{Type: "http", URL: srv.URL + "/seed.tar.gz", ExpectedHash: good}},
			wantRestored: true, wantRequests: 1},
		"a mismatch is never unpacked; the next source is": {sources: []v1.SeedSource{
			{Type: "http", URL: srv.URL + "/tampered.tar.gz", ExpectedHash: good},
			{Type: "http", URL: srv.URL + "/seed.tar.gz", ExpectedHash: "sha256:" + good},
		}, wantRestored: true, wantRequests: 2},
		"no verified source stops the pod": {sources: []v1.SeedSource{{Type: "http", URL: srv.URL + "/seed.tar.gz", ExpectedHash: bad}},
			wantErr: true, wantRequests: 1},
		"a non-empty data dir is never overwritten": {sources: []v1.SeedSource{{Type: "http", URL: srv.URL + "/seed.tar.gz", ExpectedHash: good}},
			existing: true, wantRequests: 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			requests.Store(0)
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			if err := os.MkdirAll(filepath.Join(data, "lost+found"), 0o755); err != nil {
				t.Fatal(err)
			}
			if c.existing {
				if err := os.WriteFile(filepath.Join(data, "genesis.bytes"), []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := runScript(t, initScript(t, spec(c.sources...), "seed-restore"), dir)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v; output:\n%s", err, c.wantErr, out)
			}
			_, statErr := os.Stat(filepath.Join(data, "db", "000001.log"))
			if restored := statErr == nil; restored != c.wantRestored {
				t.Errorf("restored %v, want %v; output:\n%s", restored, c.wantRestored, out)
			}
			if _, err := os.Stat(filepath.Join(data, ".seeded")); (err == nil) != c.wantRestored {
				t.Errorf("marker present %v, want %v", err == nil, c.wantRestored)
			}
			if got := requests.Load(); got != c.wantRequests {
				t.Errorf("%d downloads, want %d", got, c.wantRequests)
			}
			if c.existing {
				if b, _ := os.ReadFile(filepath.Join(data, "genesis.bytes")); string(b) != "mine" {
					t.Errorf("existing data changed")
				}
			}
			if _, err := os.Stat(filepath.Join(data, ".seed-restore.partial")); err == nil {
				t.Errorf("a partial download is left behind")
			}
		})
	}
}

// TestFetchPluginsScript runs the fetch-plugins script: a plugin whose sha256 matches is
// installed executable under its VM ID; one that does not stops the pod and is not installed.
func TestFetchPluginsScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl and sha256sum, as the node image has")
	}
	plugin := []byte("#!/bin/sh\necho vm\n")
	sum := sha256.Sum256(plugin)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/plugins/evm/v1" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(plugin)
	}))
	defer srv.Close()
	for name, c := range map[string]struct {
		hash    string
		wantErr bool
	}{
		"verified": {hash: hex.EncodeToString(sum[:])},
		"mismatch": {hash: strings.Repeat("f", 64), wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o755); err != nil {
				t.Fatal(err)
			}
			s := v1.LuxRuntimeSpec{NetworkID: 1, Image: imageOf("r", "v1"), PluginSource: &v1.PluginSource{
				Endpoint: srv.URL, Bucket: "plugins", VMPlugins: []v1.VMPlugin{{VMID: "evmvm", ObjectKey: "evm/v1", SHA256: c.hash}},
			}}
			out, err := runScript(t, initScript(t, s, "fetch-plugins"), dir)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v; output:\n%s", err, c.wantErr, out)
			}
			fi, statErr := os.Stat(filepath.Join(dir, "plugins", "evmvm"))
			if installed := statErr == nil; installed == c.wantErr {
				t.Fatalf("installed %v; output:\n%s", installed, out)
			}
			if statErr == nil && fi.Mode()&0o111 == 0 {
				t.Errorf("plugin not executable: %v", fi.Mode())
			}
		})
	}
}

// TestStakingKeysScript runs the staking-keys script for ordinal 2: it copies that
// validator's three keys, mode 0600, and stops naming a missing one.
func TestStakingKeysScript(t *testing.T) {
	s := v1.LuxRuntimeSpec{NetworkID: 1, Image: imageOf("r", "v1"), Validators: ptr.To[int32](3), Staking: &v1.Staking{SecretName: "keys"}}
	script := initScript(t, s, "staking-keys")
	for name, files := range map[string][]string{
		"all keys":      {"staker-2.crt", "staker-2.key", "signer-2.key", "staker-1.crt"},
		"no signer key": {"staker-2.crt", "staker-2.key"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			keys, out := filepath.Join(dir, "keys"), filepath.Join(dir, "staking")
			for _, d := range []string{keys, out} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(keys, f), []byte("key "+f), 0o400); err != nil {
					t.Fatal(err)
				}
			}
			sc := strings.ReplaceAll(strings.ReplaceAll(script, "/staking-keys/", keys+"/"), "\"/staking/", "\""+out+"/")
			cmd := exec.Command("/bin/sh", "-c", sc)
			cmd.Env = append(os.Environ(), "POD_INDEX=2")
			output, err := cmd.CombinedOutput()
			complete := len(files) == 4
			if (err == nil) != complete {
				t.Fatalf("err %v; output:\n%s", err, output)
			}
			if !complete {
				if !strings.Contains(string(output), "signer-2.key") {
					t.Errorf("the failure does not name the missing key:\n%s", output)
				}
				return
			}
			for dst, src := range map[string]string{"staker.crt": "staker-2.crt", "staker.key": "staker-2.key", "signer.key": "signer-2.key"} {
				b, err := os.ReadFile(filepath.Join(out, dst))
				if err != nil || string(b) != "key "+src {
					t.Errorf("%s = %q, %v; want the content of %s", dst, b, err, src)
				}
				if fi, _ := os.Stat(filepath.Join(out, dst)); fi != nil && fi.Mode().Perm() != 0o600 {
					t.Errorf("%s mode %v", dst, fi.Mode().Perm())
				}
			}
		})
	}
}

// TestSnapshotScript runs the snapshot CronJob's script against an httptest object store: it
// uploads a SigV4-signed archive and its sha256, and the archive holds the chain data and
// never the staking keys or the node's $HOME.
func TestSnapshotScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl with --aws-sigv4, tar and sha256sum, as the node image has")
	}
	type put struct {
		path, auth string
		body       []byte
	}
	var mu sync.Mutex
	var puts []put
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		puts = append(puts, put{r.URL.Path, r.Header.Get("Authorization"), body})
		mu.Unlock()
	}))
	defer srv.Close()
	s := v1.LuxRuntimeSpec{NetworkID: 1, Image: imageOf("r", "v1"), Validators: ptr.To[int32](3),
		Storage: &v1.StorageSpec{Size: resource.MustParse("1Gi")}, Staking: &v1.Staking{SecretName: "keys"},
		Replication: &v1.Replication{Enabled: true, S3Endpoint: srv.URL, S3Bucket: "snaps", S3Path: "mainnet", CredentialsSecret: "creds"}}
	objs, err := buildLuxRuntimeSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	var job *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CronJob" {
			job = o
		}
	}
	if job == nil {
		t.Fatal("no snapshot CronJob")
	}
	cs, _, _ := unstructured.NestedSlice(job.Object, "spec", "jobTemplate", "spec", "template", "spec", "containers")
	cmdList, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "command")
	vols, _, _ := unstructured.NestedSlice(job.Object, "spec", "jobTemplate", "spec", "template", "spec", "volumes")
	for _, v := range vols {
		if sec, ok := v.(map[string]any)["secret"]; ok {
			t.Errorf("the snapshot job mounts a Secret: %v", sec)
		}
	}
	dir := t.TempDir()
	for f, body := range map[string]string{
		"data/db/000001.log": "chain", "data/chainData/x": "c", "data/genesis.bytes": "g",
		"data/staking/staker.key": "SECRET-KEY", "data/.luxd/staking/signer.key": "SECRET-BLS", "work/.keep": "",
	} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := strings.ReplaceAll(strings.ReplaceAll(cmdList[2], "cd /data", "cd "+dir+"/data"), "/work/", dir+"/work/")
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), "S3_ENDPOINT="+srv.URL, "S3_BUCKET=snaps", "S3_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("snapshot: %v\n%s", err, out)
	}
	if len(puts) != 2 {
		t.Fatalf("%d uploads, want the archive and its sha256", len(puts))
	}
	for _, p := range puts {
		if !strings.HasPrefix(p.auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") {
			t.Errorf("PUT %s not SigV4-signed: %q", p.path, p.auth)
		}
		if !strings.HasPrefix(p.path, "/snaps/mainnet/luxd-node0-") {
			t.Errorf("PUT %s outside snaps/mainnet", p.path)
		}
	}
	sum := sha256.Sum256(puts[0].body)
	if got := strings.TrimSpace(string(puts[1].body)); got != hex.EncodeToString(sum[:]) || puts[1].path != puts[0].path+".sha256" {
		t.Errorf("sha256 %s at %s does not match the archive at %s", got, puts[1].path, puts[0].path)
	}
	gz, err := gzip.NewReader(bytes.NewReader(puts[0].body))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if strings.Contains(h.Name, "staking") || strings.Contains(h.Name, ".luxd") {
			t.Errorf("the snapshot archives %s", h.Name)
		}
	}
	if !slices.Contains(names, "db/000001.log") || !slices.Contains(names, "genesis.bytes") {
		t.Errorf("the snapshot lacks the chain data: %v", names)
	}
}

// TestSeedRestorePublishedChecksum runs the seed-restore script of a LuxNetwork whose archive
// names no expectedHash (the luxfi CRs as written) against an https object store: the archive
// is unpacked only when it matches <url>.sha256; without a published checksum it is unpacked
// unverified only when the operator allows it, and never over data; any other answer about
// the checksum stops the pod.
func TestSeedRestorePublishedChecksum(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl, sha256sum and tar, as the node image has")
	}
	archive := tarGz(t)
	sum := sha256.Sum256(archive)
	good := hex.EncodeToString(sum[:])
	var mu sync.Mutex
	var checksum string // "" is 404; "403" is a refusal (a private bucket)
	var archives atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		c := checksum
		mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, ".sha256") && c == "":
			http.NotFound(w, r)
		case strings.HasSuffix(r.URL.Path, ".sha256") && c == "403":
			http.Error(w, "denied", http.StatusForbidden)
		case strings.HasSuffix(r.URL.Path, ".sha256"):
			_, _ = io.WriteString(w, c)
		case strings.HasPrefix(r.URL.Path, "/truncated"):
			archives.Add(1)
			_, _ = w.Write(archive[:len(archive)/2])
		default:
			archives.Add(1)
			_, _ = w.Write(archive)
		}
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pemCert(srv.Certificate().Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	script := func(allow bool, path string) string {
		s := luxNetworkSeedSpec(srv.URL + path)
		cr := &luxnetwork.LuxNetwork{ObjectMeta: objMeta("luxd"), Spec: s}
		objs, err := kinds.Builtin()[kinds.Ref{Placement: kinds.PlacementLuxNetwork, Kind: "LuxNetwork"}].Build(cr,
			kinds.Context{APIGroup: kinds.DefaultAPIGroup, AllowUnverifiedSeed: allow})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range podSpec(t, findKind(t, objs, "StatefulSet")).InitContainers {
			if c.Name == "seed-restore" {
				return c.Command[2]
			}
		}
		t.Fatal("no seed-restore init container")
		return ""
	}
	for name, c := range map[string]struct {
		checksum      string
		allow, exists bool
		wantErr       bool
		wantRestored  bool
		wantArchives  int32
		wantLog       string
		path          string
	}{
		"not published, allowed, truncated":       {allow: true, path: "/truncated.tar.gz", wantErr: true, wantArchives: 1, wantLog: "not marked seeded"},
		"published and matching":                  {checksum: good + "  mainnet-node0-full.tar.gz\n", wantRestored: true, wantArchives: 1},
		"published with a prefix":                 {checksum: "sha256:" + good, wantRestored: true, wantArchives: 1},
		"published and not matching":              {checksum: strings.Repeat("0", 64), allow: true, wantErr: true, wantArchives: 1},
		"published garbage":                       {checksum: "<html>", allow: true, wantErr: true},
		"not published, not allowed":              {wantErr: true, wantLog: "not unpacked unverified"},
		"not published, allowed":                  {allow: true, wantRestored: true, wantArchives: 1, wantLog: "SeedRestoreUnverified"},
		"checksum forbidden, allowed":             {checksum: "403", allow: true, wantErr: true},
		"not published, allowed, data dir in use": {allow: true, exists: true},
	} {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			checksum = c.checksum
			mu.Unlock()
			archives.Store(0)
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			if err := os.MkdirAll(data, 0o755); err != nil {
				t.Fatal(err)
			}
			if c.exists {
				if err := os.WriteFile(filepath.Join(data, "genesis.bytes"), []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := runScript(t, script(c.allow, or(c.path, "/mainnet-node0-full.tar.gz")), dir, "CURL_CA_BUNDLE="+ca)
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v; output:\n%s", err, c.wantErr, out)
			}
			_, statErr := os.Stat(filepath.Join(data, "db", "000001.log"))
			if restored := statErr == nil; restored != c.wantRestored {
				t.Errorf("restored %v, want %v; output:\n%s", restored, c.wantRestored, out)
			}
			if got := archives.Load(); got != c.wantArchives {
				t.Errorf("%d archive downloads, want %d; output:\n%s", got, c.wantArchives, out)
			}
			if !strings.Contains(out, c.wantLog) {
				t.Errorf("output lacks %q:\n%s", c.wantLog, out)
			}
			if _, err := os.Stat(filepath.Join(data, ".seeded")); (err == nil) != c.wantRestored {
				t.Errorf("marker present %v, want %v", err == nil, c.wantRestored)
			}
			if c.exists {
				if b, _ := os.ReadFile(filepath.Join(data, "genesis.bytes")); string(b) != "mine" {
					t.Errorf("existing data changed")
				}
			}
		})
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// luxNetworkSeedSpec is a one-validator LuxNetwork seeded from url, with no expectedHash.
func luxNetworkSeedSpec(url string) luxnetwork.LuxNetworkSpec {
	return luxnetwork.LuxNetworkSpec{NetworkID: 1, Validators: 1,
		SeedRestore: &luxnetwork.SeedRestoreSpec{Enabled: true, SourceType: "ObjectStore", ObjectStoreURL: url}}
}
