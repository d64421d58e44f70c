package sample

import (
	"strings"
	"testing"
)

const (
	hexA = "4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c38428142970"
	hexB = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
	hexC = "2d20f4ff975e453dccf68c7473e6ff6375cc1c52d28cb393d5212de3e9d8ed5c"
	pod  = "74c13223-5a00-11e9-b385-42010a80018d"
)

// TestParseCgroup: each runtime's cgroup path shapes, as the runtimes
// and the kubelet lay them out (cgroupfs and systemd drivers, v1 and
// v2), decide the runtime and id; host paths are none; anything else is
// unknown with the raw path kept.
func TestParseCgroup(t *testing.T) {
	podU := strings.ReplaceAll(pod, "-", "_")
	cases := []struct {
		name, file                        string
		runtime, id, podUID, engine, path string
	}{
		{"docker cgroupfs v1", "4:memory:/docker/" + hexA + "\n2:cpu,cpuacct:/docker/" + hexA + "\n1:name=systemd:/docker/" + hexA + "\n", RuntimeDocker, hexA, "", "", "/docker/" + hexA},
		{"docker systemd v1", "8:memory:/system.slice/docker-" + hexB + ".scope\n1:name=systemd:/system.slice/docker-" + hexB + ".scope\n", RuntimeDocker, hexB, "", "", "/system.slice/docker-" + hexB + ".scope"},
		{"docker systemd v2", "0::/system.slice/docker-" + hexB + ".scope\n", RuntimeDocker, hexB, "", "", "/system.slice/docker-" + hexB + ".scope"},
		{"docker in docker", "0::/docker/" + hexA + "/docker/" + hexB + "\n", RuntimeDocker, hexB, "", "", "/docker/" + hexA + "/docker/" + hexB},
		{"podman root systemd", "0::/machine.slice/libpod-" + hexC + ".scope\n", RuntimePodman, hexC, "", "", "/machine.slice/libpod-" + hexC + ".scope"},
		{"podman systemd inside", "0::/machine.slice/libpod-" + hexC + ".scope/container\n", RuntimePodman, hexC, "", "", "/machine.slice/libpod-" + hexC + ".scope/container"},
		{"podman rootless", "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + hexC + ".scope\n", RuntimePodman, hexC, "", "", "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + hexC + ".scope"},
		{"podman cgroupfs hybrid", "9:name=systemd:/libpod_parent/libpod-" + hexC + "\n4:memory:/libpod_parent/libpod-" + hexC + "\n0::/libpod_parent/libpod-" + hexC + "\n", RuntimePodman, hexC, "", "", "/libpod_parent/libpod-" + hexC},
		{"nerdctl", "0::/system.slice/nerdctl-" + hexA + ".scope\n", RuntimeContainerd, hexA, "", "", "/system.slice/nerdctl-" + hexA + ".scope"},
		{"cri-o alone", "0::/machine.slice/crio-" + hexA + ".scope\n", RuntimeCRIO, hexA, "", "", "/machine.slice/crio-" + hexA + ".scope"},
		{"k8s cgroupfs", "11:devices:/kubepods/besteffort/pod" + pod + "/" + hexA + "\n", RuntimeKubernetes, hexA, pod, "", "/kubepods/besteffort/pod" + pod + "/" + hexA},
		{"k8s cgroupfs guaranteed", "0::/kubepods/pod" + pod + "/" + hexA + "\n", RuntimeKubernetes, hexA, pod, "", "/kubepods/pod" + pod + "/" + hexA},
		{"k8s systemd containerd", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podU + ".slice/cri-containerd-" + hexA + ".scope\n", RuntimeKubernetes, hexA, pod, "containerd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podU + ".slice/cri-containerd-" + hexA + ".scope"},
		{"k8s systemd crio", "0::/kubepods.slice/kubepods-pod" + podU + ".slice/crio-" + hexB + ".scope\n", RuntimeKubernetes, hexB, pod, "cri-o", "/kubepods.slice/kubepods-pod" + podU + ".slice/crio-" + hexB + ".scope"},
		{"k8s systemd docker", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podU + ".slice/docker-" + hexB + ".scope\n", RuntimeKubernetes, hexB, pod, "docker", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podU + ".slice/docker-" + hexB + ".scope"},
		{"kind node", "0::/docker/" + hexA + "/kubepods/besteffort/pod" + pod + "/" + hexB + "\n", RuntimeKubernetes, hexB, pod, "", "/docker/" + hexA + "/kubepods/besteffort/pod" + pod + "/" + hexB},
		{"nspawn service", "0::/machine.slice/systemd-nspawn@deb12.service/payload\n", RuntimeNspawn, "deb12", "", "", "/machine.slice/systemd-nspawn@deb12.service/payload"},
		{"nspawn escaped", `0::/machine.slice/systemd-nspawn@my\x2dbox.service` + "\n", RuntimeNspawn, "my-box", "", "", `/machine.slice/systemd-nspawn@my\x2dbox.service`},
		{"lxc 4", "0::/lxc.payload.web1\n", RuntimeLXC, "web1", "", "", "/lxc.payload.web1"},
		{"lxc 4 nested init", "0::/lxc.payload.web1/init.scope\n", RuntimeLXC, "web1", "", "", "/lxc.payload.web1/init.scope"},
		{"lxc old", "4:memory:/lxc/web2\n1:name=systemd:/lxc/web2\n", RuntimeLXC, "web2", "", "", "/lxc/web2"},
		{"host root", "0::/\n", RuntimeNone, "", "", "", "/"},
		{"host service", "0::/system.slice/ssh.service\n", RuntimeNone, "", "", "", "/system.slice/ssh.service"},
		{"host session", "0::/user.slice/user-1000.slice/session-3.scope\n", RuntimeNone, "", "", "", "/user.slice/user-1000.slice/session-3.scope"},
		{"host init", "0::/init.scope\n", RuntimeNone, "", "", "", "/init.scope"},
		{"sandbox hybrid", "9:name=systemd:/\n4:memory:/process_api/95b71918f5b80275c89aa56e343f2e11\n0::/\n", RuntimeUnknown, "", "", "", "/process_api/95b71918f5b80275c89aa56e343f2e11"},
		{"short docker id", "0::/docker/4f797c539e6c\n", RuntimeUnknown, "", "", "", "/docker/4f797c539e6c"},
		{"bare id no pod", "0::/pod-x/" + hexA + "\n", RuntimeUnknown, "", "", "", "/pod-x/" + hexA},
		{"machine scope (vm or nspawn)", `0::/machine.slice/machine-qemu\x2d1\x2dvm.scope` + "\n", RuntimeUnknown, "", "", "", `/machine.slice/machine-qemu\x2d1\x2dvm.scope`},
		{"conmon is not the container", "0::/machine.slice/libpod-conmon-" + hexC + ".scope\n", RuntimeUnknown, "", "", "", "/machine.slice/libpod-conmon-" + hexC + ".scope"},
		{"uppercase hex", "0::/docker/" + strings.ToUpper(hexA) + "\n", RuntimeUnknown, "", "", "", "/docker/" + strings.ToUpper(hexA)},
		{"empty file", "", RuntimeUnknown, "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ParseCgroup([]byte(c.file))
			if got.Runtime != c.runtime || got.ID != c.id || got.Pod != c.podUID || got.Engine != c.engine || got.Cgroup != c.path {
				t.Fatalf("ParseCgroup = %+v, want runtime %q id %q pod %q engine %q cgroup %q", got, c.runtime, c.id, c.podUID, c.engine, c.path)
			}
			if got.InContainer() != (c.id != "") {
				t.Fatalf("InContainer = %v for %+v", got.InContainer(), got)
			}
			if got.InContainer() && got.Rule == "" {
				t.Fatalf("no rule named for %+v", got)
			}
		})
	}
}

// FuzzParseCgroup: any bytes parse without a panic, and an answer in a
// container has an id and a rule.
func FuzzParseCgroup(f *testing.F) {
	f.Add([]byte("0::/docker/" + hexA + "\n"))
	f.Add([]byte("0::/kubepods/pod" + pod + "/" + hexA))
	f.Add([]byte("1:name=systemd:/lxc/a\n0::/"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := ParseCgroup(b)
		if c.InContainer() && (c.ID == "" || c.Rule == "") {
			t.Fatalf("container without id or rule: %+v", c)
		}
		if c.Runtime == "" {
			t.Fatalf("empty runtime: %+v", c)
		}
	})
}

// TestParseNSpid and TestParseNSLink: the status line and link forms.
func TestParseNSpid(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int32
	}{
		{"Name:\tx\nNSpid:\t25107\t1\nNSpgid:\t1\n", []int32{25107, 1}},
		{"NSpid:\t7\n", []int32{7}},
		{"Name:\tx\n", nil},
		{"NSpid:\t7\tx\n", nil},
		{"NSpid:\t\n", nil},
	} {
		got, ok := ParseNSpid([]byte(c.in))
		if ok != (c.want != nil) || len(got) != len(c.want) {
			t.Fatalf("ParseNSpid(%q) = %v %v, want %v", c.in, got, ok, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("ParseNSpid(%q) = %v, want %v", c.in, got, c.want)
			}
		}
	}
	for _, c := range []struct {
		kind, link string
		want       uint64
	}{{"net", "net:[4026531833]", 4026531833}, {"net", "mnt:[4026531833]", 0}, {"pid", "pid:[]", 0}, {"pid", "pid:[0]", 0}, {"uts", "uts:[12", 0}} {
		got, ok := ParseNSLink(c.kind, []byte(c.link))
		if got != c.want || ok != (c.want != 0) {
			t.Fatalf("ParseNSLink(%q, %q) = %d %v", c.kind, c.link, got, ok)
		}
	}
}

// FuzzParseNSpid: no panic, and every PID parsed is positive.
func FuzzParseNSpid(f *testing.F) {
	f.Add([]byte("NSpid:\t1\t2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pids, ok := ParseNSpid(b)
		for _, p := range pids {
			if p <= 0 {
				t.Fatal(pids)
			}
		}
		if ok && len(pids) == 0 {
			t.Fatal("ok without pids")
		}
	})
}

// TestProcMountParse: the proc mount's super options and the mounts that
// cover /proc/PID, from mountinfo lines as the kernel writes them.
func TestProcMountParse(t *testing.T) {
	mi := "22 27 0:21 / /proc rw,relatime - proc proc rw\n" +
		"30 22 0:28 / /proc/sys/fs/binfmt_misc rw - binfmt_misc binfmt_misc rw\n" +
		"40 22 8:1 /empty /proc/1234 rw - ext4 /dev/sda1 rw\n" +
		"41 27 0:50 / /proc rw,nosuid - proc proc rw,hidepid=invisible,gid=27\n"
	opts, ok, covered := parseProcMount([]byte(mi), "/proc")
	if !ok || opts != "rw,hidepid=invisible,gid=27" || len(covered) != 0 {
		t.Fatalf("last /proc mount: %q %v %v", opts, ok, covered)
	}
	opts, ok, covered = parseProcMount([]byte(mi[:strings.Index(mi, "41 27")]), "/proc")
	if !ok || opts != "rw" || len(covered) != 1 || covered[0] != "/proc/1234" {
		t.Fatalf("covered: %q %v %v", opts, ok, covered)
	}
	if v, ok := optionValue("rw,hidepid=2,subset=pid", "hidepid"); !ok || v != "2" {
		t.Fatal(v, ok)
	}
	if n, ok := parseLoadavgTasks([]byte("2.17 1.04 1.75 9/141 22459\n")); !ok || n != 141 {
		t.Fatal(n, ok)
	}
	// counts add up, and the evidence names each fact
	v := ProcView{MountPoint: "/proc", HidePID: "invisible", HidePIDApplies: true, KernelTasks: 283, HideGID: -1}
	c := v.Assess(5, 0)
	if !c.Restricted || c.TasksListed+c.TasksNotListed != c.KernelTasks || len(c.Evidence) != 2 {
		t.Fatalf("%+v", c)
	}
	c = ProcView{KernelTasks: 141, HideGID: -1}.Assess(139, 0)
	if c.Restricted || c.TasksNotListed != 2 {
		t.Fatalf("unrestricted view: %+v", c)
	}
}
