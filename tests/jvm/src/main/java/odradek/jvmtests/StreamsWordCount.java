package odradek.jvmtests;

import java.util.Arrays;
import java.util.Properties;
import java.time.Duration;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * An exactly-once (v2) Kafka Streams word count, run on the streams class path until its stdin closes:
 *   java -cp ... odradek.jvmtests.StreamsWordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR
 * Lines of INPUT are split into words; grouping by word repartitions through APPLICATION_ID-words-repartition
 * and counting keeps the store "counts" with its changelog APPLICATION_ID-counts-changelog. Every count
 * update goes to OUTPUT (no record cache), so word w's updates there are exactly 1, 2, ... n once each.
 * Writes "##state NEW_STATE" to stderr on each state change.
 */
public final class StreamsWordCount {
    private StreamsWordCount() {}

    public static void main(String[] args) throws Exception {
        Properties config = new Properties();
        config.put("bootstrap.servers", args[0]);
        config.put("application.id", args[1]);
        config.put("state.dir", args[4]);
        config.put("processing.guarantee", "exactly_once_v2");
        config.put("replication.factor", "3");
        config.put("statestore.cache.max.bytes", "0");  // each update reaches the output
        config.put("commit.interval.ms", "100");
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
                .toStream()
                .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(builder.build(), config);
        streams.setStateListener((now, before) -> {
            System.err.println("##state " + now);
            System.err.flush();
        });
        streams.start();
        while (System.in.read() != -1) {
            // runs until the test closes stdin
        }
        streams.close(Duration.ofSeconds(30));
        System.exit(0);
    }
}
