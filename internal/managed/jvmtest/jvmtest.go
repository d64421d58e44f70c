// Package jvmtest starts real JVMs for tests: it writes a small Java
// program that allocates, keeps a few threads and triggers garbage
// collections, compiles it once with javac into a cache directory keyed by
// the source's hash, and runs it with the java of a JDK found on the
// machine. Tests skip when no JDK is installed.
package jvmtest

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Source is the program: it starts three idle threads, prints "ready",
// then reads commands from stdin, one a line, and answers each with
// "done": "alloc N" allocates N MiB in 1 MiB arrays (young collections),
// "gc" calls System.gc() (a full collection). Between commands it does
// nothing, so its counters stand still. It exits when stdin closes.
const Source = `import java.io.*;
import java.util.*;
public class InquestAlloc {
  static volatile Object sink;
  public static void main(String[] args) throws Exception {
    for (int i = 0; i < 3; i++) {
      Thread t = new Thread(() -> { try { Thread.sleep(Long.MAX_VALUE); } catch (InterruptedException e) {} }, "idle-" + i);
      t.setDaemon(true);
      t.start();
    }
    System.out.println("ready");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    List<byte[]> keep = new ArrayList<>();
    String line;
    while ((line = in.readLine()) != null) {
      if (line.startsWith("alloc ")) {
        int n = Integer.parseInt(line.substring(6).trim());
        for (int i = 0; i < n; i++) {
          byte[] b = new byte[1 << 20];
          sink = b;
          if (i % 8 == 0) { keep.add(b); if (keep.size() > 8) keep.remove(0); }
        }
      } else if (line.equals("gc")) {
        System.gc();
      }
      System.out.println("done");
      System.out.flush();
    }
  }
}
`

// JDK is one installed JDK: its java and javac.
type JDK struct{ Name, Java, Javac string }

// JDKs lists the JDKs found: the default java/javac on PATH (Debian's
// OpenJDK) and every /usr/lib/jvm/*/bin with both tools, deduplicated by
// resolved path.
func JDKs() []JDK {
	var out []JDK
	seen := map[string]bool{}
	add := func(name, java, javac string) {
		r, err := filepath.EvalSymlinks(java)
		if err != nil || seen[r] {
			return
		}
		if _, err := os.Stat(javac); err != nil {
			return
		}
		seen[r] = true
		out = append(out, JDK{Name: name, Java: java, Javac: javac})
	}
	if j, err := exec.LookPath("java"); err == nil {
		if c, err := exec.LookPath("javac"); err == nil {
			add("default", j, c)
		}
	}
	ds, _ := filepath.Glob("/usr/lib/jvm/*/bin/java")
	for _, j := range ds {
		add(filepath.Base(filepath.Dir(filepath.Dir(j))), j, filepath.Join(filepath.Dir(j), "javac"))
	}
	return out
}

var compileMu sync.Mutex

// classDir compiles Source with javac (once per source hash and JDK
// release, cached under the user cache directory) and returns the class
// directory. Classes are compiled with --release 11 so every JDK here runs
// them.
func classDir(t testing.TB, jdk JDK) string {
	t.Helper()
	compileMu.Lock()
	defer compileMu.Unlock()
	sum := sha256.Sum256([]byte(Source))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "inquest-test", "jvm", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "InquestAlloc.class")); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(tmp, "InquestAlloc.java")
	if err := os.WriteFile(src, []byte(Source), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(jdk.Javac, "--release", "11", "-d", tmp, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "InquestAlloc.class")); serr != nil {
			t.Fatal(err)
		}
		os.RemoveAll(tmp)
	}
	return dir
}

// Proc is a running test JVM.
type Proc struct {
	Cmd *exec.Cmd
	PID int
	JDK JDK
	in  io.WriteCloser
	out *bufio.Reader
}

// Start runs the program under jdk with the JVM options opts (for example
// "-XX:-UsePerfData") and waits for its "ready" line. The JVM is stopped
// at the end of the test. Its heap is -Xmx64m with the JDK's default
// collector.
func Start(t testing.TB, jdk JDK, opts ...string) *Proc {
	t.Helper()
	return StartWrapped(t, jdk, nil, opts...)
}

// StartWrapped is Start with the java command run by wrapper (a command
// and its arguments that exec java with the arguments after them, such
// as unshare), so the JVM keeps the wrapper's pid.
func StartWrapped(t testing.TB, jdk JDK, wrapper []string, opts ...string) *Proc {
	t.Helper()
	return start(t, jdk, classDir(t, jdk), "", wrapper, opts)
}

// StartAs is Start with the JVM running as user (a user name or uid,
// through setpriv; the caller must be root). The compiled class is copied
// to a world-readable directory, which is also the JVM's working
// directory, so the other user can load it; the directory is removed at
// the end of the test.
func StartAs(t testing.TB, jdk JDK, user string, opts ...string) *Proc {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv is not installed")
	}
	b, err := os.ReadFile(filepath.Join(classDir(t, jdk), "InquestAlloc.class"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "inquest-jvm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "InquestAlloc.class"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := []string{setpriv, "--reuid=" + user, "--regid=" + user, "--clear-groups", "--"}
	return start(t, jdk, dir, dir, wrapper, opts)
}

// start runs the program from class directory dir with working directory
// cwd ("" keeps the test's).
func start(t testing.TB, jdk JDK, dir, cwd string, wrapper, opts []string) *Proc {
	t.Helper()
	args := append([]string{jdk.Java, "-Xmx64m", "-Xms16m"}, opts...)
	args = append(args, "-cp", dir, "InquestAlloc")
	args = append(append([]string(nil), wrapper...), args...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = cwd
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd, PID: cmd.Process.Pid, JDK: jdk, in: in, out: bufio.NewReader(out)}
	t.Cleanup(p.Stop)
	line, err := p.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("the test JVM did not start: %q %v", line, err)
	}
	return p
}

// Do sends one command ("alloc N", "gc") and waits for its "done".
func (p *Proc) Do(t testing.TB, cmd string) {
	t.Helper()
	if _, err := io.WriteString(p.in, cmd+"\n"); err != nil {
		t.Fatalf("write %q to the JVM: %v", cmd, err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "done" {
		t.Fatalf("the JVM answered %q to %q: %v", line, cmd, err)
	}
}

// Stop ends the JVM (closing stdin, then killing) and reaps it.
func (p *Proc) Stop() {
	if p.Cmd.ProcessState != nil {
		return
	}
	p.in.Close()
	p.Cmd.Process.Kill()
	p.Cmd.Wait()
}

// Default returns the first JDK, or skips the test when none is
// installed (fails it under CI=true, where .ci/run installs one).
func Default(t testing.TB) JDK {
	t.Helper()
	ks := JDKs()
	if len(ks) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("no JDK (java and javac) installed; .ci/run installs openjdk-17-jdk-headless")
		}
		t.Skip("no JDK (java and javac) installed")
	}
	return ks[0]
}
