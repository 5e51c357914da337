package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dynalease/dynalease/internal/testkit/ddbtest"
	"github.com/dynalease/dynalease/internal/testkit/testbin"
)

const patience = time.Minute

// replica is one running copy of the program.
type replica struct {
	cmd  *exec.Cmd
	addr chan string
	done chan error
}

func startReplica(t *testing.T, bin, endpoint, table, pod string) *replica {
	t.Helper()
	cmd := exec.Command(bin, "-table="+table, "-create-table", "-listen=127.0.0.1:0", "-lease=2s", "-renew-deadline=1500ms", "-retry=200ms")
	cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT="+endpoint, "POD_NAME="+pod)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, addr: make(chan string, 1), done: make(chan error, 1)}
	serving := regexp.MustCompile(`event=serving addr=(\S+)`)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				r.addr <- m[1]
			}
			t.Logf("%s: %s", pod, sc.Text())
		}
		_, _ = io.Copy(io.Discard, stderr)
		r.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return r
}

func (r *replica) url(t *testing.T) string {
	t.Helper()
	select {
	case a := <-r.addr:
		r.addr <- a
		return "http://" + a
	case <-time.After(patience):
		t.Fatal("the replica never served")
		return ""
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventually polls cond until it holds or patience runs out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const leaderSeries = `dynalease_election_leader{election="singleton-worker"} `

func leads(t *testing.T, r *replica) bool {
	_, body := get(t, r.url(t)+"/metrics")
	return strings.Contains(body, leaderSeries+"1")
}

// Two replicas against DynamoDB Local: the endpoints answer, one leads,
// and SIGTERM to the leader hands over to the other at once.
func TestDynamoDBSingletonWorker(t *testing.T) {
	endpoint := ddbtest.Endpoint(t)
	// The program creates its table: DynamoDB Local keeps the tables of
	// each access key apart, and the program has its own.
	table := fmt.Sprintf("k8s-example-%d", time.Now().UnixNano())
	bin := filepath.Join(t.TempDir(), "worker")
	if err := testbin.Build(bin, ".", nil); err != nil {
		t.Fatal(err)
	}
	a := startReplica(t, bin, endpoint, table, "worker-a")
	eventually(t, "worker-a leads", func() bool { return leads(t, a) })
	b := startReplica(t, bin, endpoint, table, "worker-b")
	for _, r := range []*replica{a, b} {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body := get(t, r.url(t)+path); code != http.StatusOK || body != "ok\n" {
				t.Fatalf("%s: %d %q", path, code, body)
			}
		}
	}
	eventually(t, "worker-b observes the leader", func() bool {
		_, body := get(t, b.url(t)+"/metrics")
		return strings.Contains(body, leaderSeries+"0") && strings.Contains(body, `dynalease_election_rounds_total{election="singleton-worker",outcome="held"}`)
	})

	start := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.done:
		if err != nil {
			t.Fatalf("worker-a after SIGTERM: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("worker-a did not exit after SIGTERM")
	}
	eventually(t, "worker-b leads", func() bool { return leads(t, b) })
	t.Logf("handover after SIGTERM: %v (a full lease would be 2s)", time.Since(start))
}

// The manifest parses, and its settings fit the program's: three replicas,
// the probes on the served paths, a grace period longer than the renew
// deadline plus a request.
func TestDeploymentManifest(t *testing.T) {
	f, err := os.Open("deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var kinds []string
	for {
		var doc struct {
			Kind string
			Spec struct {
				Replicas int
				Template struct {
					Spec struct {
						TerminationGracePeriodSeconds int    `yaml:"terminationGracePeriodSeconds"`
						ServiceAccountName            string `yaml:"serviceAccountName"`
						Containers                    []struct {
							LivenessProbe struct {
								HTTPGet struct{ Path string } `yaml:"httpGet"`
							} `yaml:"livenessProbe"`
							ReadinessProbe struct {
								HTTPGet struct{ Path string } `yaml:"httpGet"`
							} `yaml:"readinessProbe"`
							Resources struct{ Requests map[string]string } `yaml:"resources"`
						}
					}
				}
			}
		}
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("deployment.yaml: %v", err)
		}
		kinds = append(kinds, doc.Kind)
		if doc.Kind != "Deployment" {
			continue
		}
		s := doc.Spec.Template.Spec
		if doc.Spec.Replicas != 3 || len(s.Containers) != 1 || s.ServiceAccountName == "" {
			t.Fatalf("deployment: %+v", doc.Spec)
		}
		c := s.Containers[0]
		if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.Resources.Requests["cpu"] == "" {
			t.Fatalf("container: %+v", c)
		}
		// RenewDeadline 10 s for the work to return, plus the release's request.
		if s.TerminationGracePeriodSeconds < 12 {
			t.Fatalf("terminationGracePeriodSeconds %d does not cover the handover", s.TerminationGracePeriodSeconds)
		}
	}
	if strings.Join(kinds, ",") != "Deployment,ServiceAccount" {
		t.Fatalf("kinds %v", kinds)
	}
}
