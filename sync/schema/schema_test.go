package schema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/labpool/labpool/sync/schema"
)

// TestEveryKindNamesItsWriterAndCap: each kind has its one writer named and
// a data cap beside it.
func TestEveryKindNamesItsWriterAndCap(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range schema.Kinds() {
		if seen[k.Name] {
			t.Errorf("kind %q listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.Writer == "" || k.MaxData <= 0 || k.MaxKey < 0 {
			t.Errorf("kind %+v: want a writer and a data cap", k)
		}
	}
}

func TestCheck(t *testing.T) {
	rules, _ := schema.Lookup(schema.KindAlertRules)
	tests := []struct {
		name, kind, key string
		data            int
		rule            string // "" = allowed
	}{
		{"node", schema.KindNode, "", 1 << 10, ""},
		{"at the cap", schema.KindAlertRules, "", rules.MaxData, ""},
		{"over the cap", schema.KindAlertRules, "", rules.MaxData + 1, schema.RuleCap},
		{"a key on a singleton", schema.KindNode, "x", 2, schema.RuleCap},
		{"a long key", schema.KindAlert, strings.Repeat("a", 257), 2, schema.RuleCap},
		{"unknown kind", "junk", "", 2, schema.RuleKind},
		{"empty kind", "", "", 2, schema.RuleKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := schema.Check(tt.kind, tt.key, tt.data)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("Check = %v; want allowed", err)
				}
				return
			}
			if !errors.Is(err, schema.ErrRefused) || !strings.HasPrefix(err.Error(), "refused: ") || !strings.HasSuffix(err.Error(), "(rule: "+tt.rule+")") {
				t.Fatalf("Check = %v; want a refusal naming rule %q", err, tt.rule)
			}
		})
	}
}

func TestQuota(t *testing.T) {
	if err := schema.Quota("W", 90, 10, 100); err != nil {
		t.Errorf("at the quota: %v", err)
	}
	if err := schema.Quota("W", 91, 10, 100); !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), "(rule: "+schema.RuleQuota+")") {
		t.Errorf("over the quota: %v", err)
	}
}

// TestEveryKindCapsItsCount: each kind caps the records an origin holds of
// it, and a control kind's cap times its size fits the quotas' order.
func TestEveryKindCapsItsCount(t *testing.T) {
	for _, k := range schema.Kinds() {
		if k.MaxRecords <= 0 {
			t.Errorf("kind %q: want a record count cap", k.Name)
		}
		if k.MaxKey == 0 && k.MaxRecords != 1 {
			t.Errorf("kind %q has a single key, but a count cap of %d", k.Name, k.MaxRecords)
		}
	}
	if schema.ControlQuota >= schema.OriginQuota {
		t.Errorf("ControlQuota %d is not under OriginQuota %d", schema.ControlQuota, schema.OriginQuota)
	}
}

func TestCount(t *testing.T) {
	job, _ := schema.Lookup(schema.KindJob)
	if err := schema.Count("W", schema.KindJob, int64(job.MaxRecords-1)); err != nil {
		t.Errorf("the last record under the cap: %v", err)
	}
	if err := schema.Count("W", schema.KindJob, int64(job.MaxRecords)); !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), "(rule: "+schema.RuleCount+")") {
		t.Errorf("over the cap: %v", err)
	}
	if err := schema.Control("W", 90, 10, 100); err != nil {
		t.Errorf("at the control quota: %v", err)
	}
	if err := schema.Control("W", 91, 10, 100); !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), "(rule: "+schema.RuleControlQuota+")") {
		t.Errorf("over the control quota: %v", err)
	}
}
