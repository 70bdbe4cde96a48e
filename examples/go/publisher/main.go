// Command publisher publishes send jobs to push-connector the way the contract asks
// (contracts/asyncapi.yaml):
//
//	publisher [-prefix push] AMQP_URL FILE
//
// FILE holds jobs, one JSON object per line (JSON Lines). Each job goes to the direct exchange
// <prefix>.jobs with routing key "job", or "job.high" when it says "priority": "high";
// persistent, mandatory (a job that routes nowhere comes back instead of vanishing) and with
// publisher confirms: each job is confirmed by the broker, or the program stops naming it. A
// nack or a return means the job was NOT taken: publish it again later. Delivery is at least
// once; job_id is not an idempotency key. Prints {"published": N}.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func main() {
	prefix := flag.String("prefix", "push", "topology name prefix")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: publisher [-prefix push] AMQP_URL FILE")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "publisher:", err)
		os.Exit(1)
	}
}

func run(url, path, prefix string) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	conn, err := amqp.Dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return err
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))

	published := 0
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 4<<20)
	for line := 1; scanner.Scan(); line++ {
		body := scanner.Bytes()
		if len(body) == 0 {
			continue
		}
		var job struct {
			JobID    string `json:"job_id"`
			Priority string `json:"priority"`
		}
		if err := json.Unmarshal(body, &job); err != nil {
			return fmt.Errorf("%s:%d: not JSON: %v", path, line, err)
		}
		key := "job"
		if job.Priority == "high" {
			key = "job.high"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := ch.PublishWithContext(ctx, prefix+".jobs", key, true, false, amqp.Publishing{
			ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: append([]byte(nil), body...),
		})
		cancel()
		if err != nil {
			return fmt.Errorf("job %q: %v", job.JobID, err)
		}
		select {
		case confirmation := <-confirms:
			if !confirmation.Ack {
				return fmt.Errorf("job %q: refused by the broker (queue full?): publish it again later", job.JobID)
			}
		case <-time.After(30 * time.Second):
			return fmt.Errorf("job %q: not confirmed within 30 s: publish it again", job.JobID)
		}
		// RabbitMQ sends basic.return before the ack of an unroutable mandatory message.
		select {
		case <-returns:
			return fmt.Errorf("job %q: returned unroutable (is the topology declared, the prefix right?)", job.JobID)
		default:
		}
		published++
	}
	if err := scanner.Err(); err != nil {
		return err
	}
	fmt.Printf("{\"published\": %d}\n", published)
	return nil
}
