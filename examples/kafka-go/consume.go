package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupd/dedupd/client"
)

// consume runs one record through Transfers until it has an outcome, then
// commits its offset. It returns an error only when ctx ends first: the
// record is then left uncommitted for the partition's next owner.
func consume(ctx context.Context, kc *kgo.Client, t *Transfers, deadLetterTopic string, rec *kgo.Record) error {
	for {
		id, res, err := t.Handle(ctx, rec.Value)
		action, delay := Disposition(err, t.Lease)
		switch action {
		case Commit:
			if !res.Replayed {
				t.hooks.at(pointCompleted, id)
			}
		case DeadLetter:
			log.Printf("event %q: dead-lettered: %v", id, err)
			if err := deadLetter(ctx, kc, deadLetterTopic, rec, err); err != nil {
				return err
			}
		case Retry:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.Printf("event %s: retry in %s: %v", id, delay, err)
			if err := sleep(ctx, delay); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(os.Stdout, "event %s %d/%d %s\n", id, rec.Partition, rec.Offset, describe(res, err))
		// The outcome is in dedupd: only now may the offset move past the
		// record. A failed commit (the partition moved to another member)
		// is harmless: its next owner polls the record again and Do
		// replays the outcome.
		if err := kc.CommitRecords(ctx, rec); err != nil {
			log.Printf("event %s: commit %d/%d: %v", id, rec.Partition, rec.Offset, err)
		}
		return nil
	}
}

// deadLetter copies rec to topic with the reason in a header, and waits
// for the broker to have it, so that committing rec's offset loses nothing.
func deadLetter(ctx context.Context, kc *kgo.Client, topic string, rec *kgo.Record, cause error) error {
	dead := &kgo.Record{Topic: topic, Key: rec.Key, Value: rec.Value, Headers: []kgo.RecordHeader{
		{Key: "dead-letter-reason", Value: []byte(truncate(cause.Error(), 200))},
		{Key: "source", Value: fmt.Appendf(nil, "%s/%d/%d", rec.Topic, rec.Partition, rec.Offset)},
	}}
	for {
		err := kc.ProduceSync(ctx, dead).FirstErr()
		if err == nil || ctx.Err() != nil {
			return err
		}
		log.Printf("dead letter of %s/%d/%d: %v", rec.Topic, rec.Partition, rec.Offset, err)
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

func describe(res client.DoResult, err error) string {
	switch {
	case err != nil:
		return "dead-lettered"
	case res.Settled:
		return "settled"
	case res.Replayed:
		return "replayed"
	}
	return "completed"
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
