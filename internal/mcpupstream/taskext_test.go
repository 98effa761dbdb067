package mcpupstream_test

import (
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// An upstream's CreateTaskResult and tasks/get answer of the tasks
// extension are checked before anything of them is kept or shown.
func TestDecodeExtTask(t *testing.T) {
	long := strings.Repeat("x", 257)
	for _, tc := range []struct {
		reason, data string
		// create: as a CreateTaskResult; else as a tasks/get answer.
		create bool
		ok     bool
	}{
		{"a task, flat", `{"resultType":"task","taskId":"t1","status":"working","ttlMs":60000,"pollIntervalMs":200,"createdAt":"x","lastUpdatedAt":"x"}`, true, true},
		{"no ttlMs: no limit", `{"taskId":"t1","status":"working"}`, true, true},
		{"no id", `{"status":"working"}`, true, false},
		{"an id over 256 bytes", `{"taskId":"` + long + `","status":"working"}`, true, false},
		{"an unknown status", `{"taskId":"t1","status":"sleeping"}`, true, false},
		{"a negative ttlMs", `{"taskId":"t1","status":"working","ttlMs":-1}`, true, false},
		{"a negative pollIntervalMs", `{"taskId":"t1","status":"working","pollIntervalMs":-5}`, true, false},
		{"a round's requestState leaking into the task", `{"taskId":"t1","status":"working","requestState":"s"}`, true, false},
		{"a round's inputRequests on the task", `{"taskId":"t1","status":"working","inputRequests":{}}`, true, false},
		{"not an object", `[1]`, true, false},
		{"done, its result inline", `{"taskId":"t1","status":"completed","result":{"content":[]}}`, false, true},
		{"failed, its error inline", `{"taskId":"t1","status":"failed","error":{"code":-32603,"message":"m"}}`, false, true},
		{"both a result and an error", `{"taskId":"t1","status":"failed","result":{"content":[]},"error":{"code":-32603,"message":"m"}}`, false, false},
		{"asking, its requests inline", `{"taskId":"t1","status":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}}}`, false, true},
		{"an unknown status on get", `{"taskId":"t1","status":"done"}`, false, false},
	} {
		var err error
		if tc.create {
			_, err = mcpupstream.DecodeExtCreateTask([]byte(tc.data))
		} else {
			_, err = mcpupstream.DecodeDetailedTask([]byte(tc.data))
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: %s: error %v, want ok=%v", tc.reason, tc.data, err, tc.ok)
		}
	}
}

// A tasks/get answer's parts are kept apart: the outcome, or the requests.
func TestDecodeDetailedTaskParts(t *testing.T) {
	d, err := mcpupstream.DecodeDetailedTask([]byte(`{"taskId":"t1","status":"input_required","ttlMs":5,"inputRequests":{"k":{"method":"elicitation/create","params":{}}},"result":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "t1" || d.TTL == nil || *d.TTL != 5 || d.Result != nil || d.Error != nil || !strings.Contains(string(d.InputRequests), "elicitation/create") {
		t.Fatalf("DecodeDetailedTask = %+v", d)
	}
}
