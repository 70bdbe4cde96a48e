// Command results reads push-connector's results stream, prunes dead tokens and counts each
// campaign (contracts/result.schema.json):
//
//	results [-prefix push] [-offset-file FILE] [-until N] [-idle 5s] AMQP_URL
//
// It consumes the stream <prefix>.results.stream with a prefetch and manual acks (a stream
// requires both; an ack only returns credit), from the offset after the one stored in
// -offset-file (else from the first result kept). Results are delivered at least once: each
// (job_id, mn_message_id) counts once, under its latest outcome (docs/contracts.md). A token
// whose latest outcome is invalid_token is to be deleted from your database: it is listed in
// "prune". Stops after -until results or -idle without one, stores the offset, prints one JSON
// object.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

type result struct {
	SchemaVersion int               `json:"schema_version"`
	JobID         string            `json:"job_id"`
	MessageID     string            `json:"mn_message_id"`
	Campaign      string            `json:"campaign"`
	Target        map[string]string `json:"target"`
	Outcome       string            `json:"outcome"`
	CompletedAt   string            `json:"completed_at"`
	Replays       int               `json:"replays"`
}

// later reports whether a outranks b: more replays, then a later completed_at, then an outcome
// other than dead_lettered.
func later(a, b result) bool {
	if a.Replays != b.Replays {
		return a.Replays > b.Replays
	}
	if a.CompletedAt != b.CompletedAt {
		return a.CompletedAt > b.CompletedAt
	}
	return a.Outcome != "dead_lettered" && b.Outcome == "dead_lettered"
}

func main() {
	prefix := flag.String("prefix", "push", "topology name prefix")
	offsetFile := flag.String("offset-file", "", "where the last offset read is kept")
	until := flag.Int("until", 0, "stop after this many results (0: when idle)")
	idle := flag.Duration("idle", 5*time.Second, "stop after this long without a result")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: results [-prefix push] [-offset-file FILE] [-until N] [-idle 5s] AMQP_URL")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *prefix, *offsetFile, *until, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "results:", err)
		os.Exit(1)
	}
}

func run(url, prefix, offsetFile string, until int, idle time.Duration) error {
	var start interface{} = "first"
	if offsetFile != "" {
		if text, err := os.ReadFile(offsetFile); err == nil {
			stored, err := strconv.ParseInt(strings.TrimSpace(string(text)), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %v", offsetFile, err)
			}
			start = stored + 1
		}
	}
	conn, err := amqp.Dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(500, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.Consume(prefix+".results.stream", "", false, false, false, false, amqp.Table{"x-stream-offset": start})
	if err != nil {
		return err
	}
	latest := map[[2]string]result{}
	seen, lastOffset := 0, int64(-1)
loop:
	for until == 0 || seen < until {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return fmt.Errorf("the broker closed the consumer")
			}
			var r result
			if err := json.Unmarshal(d.Body, &r); err != nil {
				return fmt.Errorf("a result that is not JSON: %v", err)
			}
			if r.SchemaVersion > 1 {
				return fmt.Errorf("result schema_version %d is newer than this reader knows (1)", r.SchemaVersion)
			}
			key := [2]string{r.JobID, r.MessageID}
			if old, found := latest[key]; !found || later(r, old) {
				latest[key] = r
			}
			if offset, ok := d.Headers["x-stream-offset"].(int64); ok {
				lastOffset = offset
			}
			if err := d.Ack(false); err != nil {
				return err
			}
			seen++
		case <-time.After(idle):
			break loop
		}
	}
	if offsetFile != "" && lastOffset >= 0 {
		if err := os.WriteFile(offsetFile, []byte(strconv.FormatInt(lastOffset, 10)), 0o644); err != nil {
			return err
		}
	}
	campaigns := map[string]map[string]int{}
	prune := []string{}
	for _, r := range latest {
		if campaigns[r.Campaign] == nil {
			campaigns[r.Campaign] = map[string]int{}
		}
		campaigns[r.Campaign][r.Outcome]++
		if token, ok := r.Target["token"]; ok && r.Outcome == "invalid_token" {
			prune = append(prune, token)
		}
	}
	sort.Strings(prune)
	out, err := json.Marshal(map[string]interface{}{"results": seen, "recipients": len(latest), "campaigns": campaigns, "prune": prune})
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}
