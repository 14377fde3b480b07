package jobs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestSpecWireFormat: splitting Spec into its portable part and
// ContainerSpec left the wire format one flat object: what old clients send
// and old records hold decodes the same, and encodes back to the same keys.
func TestSpecWireFormat(t *testing.T) {
	old := `{"name":"train","image":"img:1","cmd":["python"],"env":["A=1"],"gpus":2,"cpus":4,"memory_bytes":1073741824,` +
		`"shm_bytes":65536,"mounts":[{"folder":"data","target":"/data","rw":true}],"ports":[8888],"restart":"on-failure",` +
		`"queue":true,"user":"1000:1000","privileged":true,"network_mode":"host","pid_mode":"host","ipc_mode":"host",` +
		`"uts_mode":"host","userns_mode":"host","cap_add":["SYS_ADMIN"],"devices":["/dev/sda"],"security_opt":["x"],` +
		`"binds":["/:/h"],"port_binds":["127.0.0.1::80"]}`
	s, err := DecodeSpec(bytes.NewReader([]byte(old)))
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Name: "train", Image: "img:1", Cmd: []string{"python"}, Env: []string{"A=1"}, GPUs: 2, CPUs: 4, MemoryBytes: 1 << 30,
		Mounts: []Mount{{Folder: "data", Target: "/data", ReadWrite: true}}, Ports: []int{8888}, Queue: true,
		ContainerSpec: ContainerSpec{ShmBytes: 65536, Restart: "on-failure", User: "1000:1000", Privileged: true, NetworkMode: "host",
			PidMode: "host", IpcMode: "host", UTSMode: "host", UsernsMode: "host", CapAdd: []string{"SYS_ADMIN"}, Devices: []string{"/dev/sda"},
			SecurityOpt: []string{"x"}, Binds: []string{"/:/h"}, PortBinds: []string{"127.0.0.1::80"}}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("decoded %+v\nwant %+v", s, want)
	}
	b, _ := json.Marshal(s)
	var got, sent map[string]any
	json.Unmarshal(b, &got)
	json.Unmarshal([]byte(old), &sent)
	if !reflect.DeepEqual(got, sent) {
		t.Errorf("encoded %s\nwant the keys of %s", b, old)
	}
	var j Job
	if err := json.Unmarshal([]byte(`{"id":"j1","spec":`+old+`,"state":"running"}`), &j); err != nil || j.Spec.User != "1000:1000" || j.Spec.Restart != "on-failure" {
		t.Errorf("an old record: %+v, %v", j.Spec, err)
	}
	if !(ContainerSpec{}).IsZero() || want.ContainerSpec.IsZero() {
		t.Error("IsZero")
	}
}
