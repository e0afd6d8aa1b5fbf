// Command fakekafka runs kfake, franz-go's in-memory implementation of the
// Kafka protocol, as a process of its own: no Kafka broker can be installed
// on the machines this example is tested on, so its test starts this
// instead. It is a test double, not a broker: nothing is written to disk
// and everything is lost when it exits.
//
// It prints one line, "listening HOST:PORT[,HOST:PORT...]", once the
// brokers accept connections, then serves until SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	brokers := flag.Int("brokers", 1, "number of brokers")
	topics := flag.String("topics", "", "topics to create at start, comma-separated")
	partitions := flag.Int("partitions", 4, "partitions of each topic")
	// kfake refuses session timeouts under 6s by default; the example's
	// test uses short ones so that a killed consumer's partitions move on
	// quickly.
	minSession := flag.Duration("min-session-timeout", 500*time.Millisecond, "shortest consumer group session timeout accepted")
	flag.Parse()

	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.GroupMinSessionTimeout(*minSession)}
	if *topics != "" {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), strings.Split(*topics, ",")...))
	}
	cluster, err := kfake.NewCluster(opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	fmt.Printf("listening %s\n", strings.Join(cluster.ListenAddrs(), ","))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
}
