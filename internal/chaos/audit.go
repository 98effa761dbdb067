package chaos

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
)

// auditLine is what the soak reads of an audit line.
type auditLine struct {
	CallID   string `json:"call_id"`
	Decision string `json:"decision"`
	Replayed bool   `json:"replayed"`
}

// auditIndex is one replica's audit: call id → decision, and how many
// lines could not be read (a line cut by a SIGKILL would be one).
type auditIndex struct {
	decisions  map[string]string
	lines      int
	unreadable int
}

// readAudit reads a replica's audit file and any rotated siblings.
func readAudit(path string) (*auditIndex, error) {
	idx := &auditIndex{decisions: map[string]string{}}
	files, err := filepath.Glob(path + "*")
	if err != nil {
		return nil, err
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			idx.lines++
			var l auditLine
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				idx.unreadable++
				continue
			}
			if l.CallID != "" {
				idx.decisions[l.CallID] = l.Decision
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return idx, nil
}
