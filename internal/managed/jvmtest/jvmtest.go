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

// Source is the program: it prints "ready" once its threads run, then
// allocates about 1 MiB every 5 ms (young collections), calls System.gc()
// every 2 s (a full collection), and exits when its stdin closes.
const Source = `import java.util.*;
public class InquestAlloc {
  static volatile Object sink;
  public static void main(String[] args) throws Exception {
    for (int i = 0; i < 3; i++) {
      Thread t = new Thread(() -> { try { Thread.sleep(Long.MAX_VALUE); } catch (InterruptedException e) {} }, "idle-" + i);
      t.setDaemon(true);
      t.start();
    }
    Thread in = new Thread(() -> { try { while (System.in.read() >= 0) {} } catch (Exception e) {} System.exit(0); }, "stdin");
    in.setDaemon(true);
    in.start();
    System.out.println("ready");
    System.out.flush();
    List<byte[]> keep = new ArrayList<>();
    long lastGC = System.nanoTime();
    for (long n = 0; ; n++) {
      byte[] b = new byte[1 << 20];
      sink = b;
      if (n % 8 == 0) { keep.add(b); if (keep.size() > 16) keep.remove(0); }
      if (System.nanoTime() - lastGC > 2_000_000_000L) { System.gc(); lastGC = System.nanoTime(); }
      Thread.sleep(5);
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
}

// Start runs the program under jdk with the JVM options opts (for example
// "-XX:-UsePerfData") and waits for its "ready" line. The JVM is stopped
// at the end of the test.
func Start(t testing.TB, jdk JDK, opts ...string) *Proc {
	t.Helper()
	dir := classDir(t, jdk)
	args := append([]string{"-Xmx64m", "-Xms16m"}, opts...)
	args = append(args, "-cp", dir, "InquestAlloc")
	cmd := exec.Command(jdk.Java, args...)
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
	p := &Proc{Cmd: cmd, PID: cmd.Process.Pid, JDK: jdk, in: in}
	t.Cleanup(p.Stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("the test JVM did not start: %q %v", line, err)
	}
	go io.Copy(io.Discard, out)
	return p
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

// Default returns the first JDK or skips the test.
func Default(t testing.TB) JDK {
	t.Helper()
	ks := JDKs()
	if len(ks) == 0 {
		t.Skip("no JDK (java and javac) installed")
	}
	return ks[0]
}
