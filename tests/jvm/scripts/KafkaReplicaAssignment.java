// Kafka 2.8.2's replica placement (kafka.admin.AdminUtils.assignReplicasToBrokers) for cases read from stdin,
// run in Java's source-file mode on the kafka_2.13 class path (it is not built with the programs under src/,
// which compile against kafka-clients alone). One case per line:
//   <id> <broker>:<rack or ->,... <partitions> <replication factor> <fixed start index> <start partition id>
// One answer per line: "<id> <partition>:<broker>,<broker>;..." in partition order, or "<id> ERROR <exception>".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import kafka.admin.AdminUtils;
import kafka.admin.BrokerMetadata;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

public class KafkaReplicaAssignment {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) continue;
            String[] f = line.trim().split(" ");
            List<BrokerMetadata> brokers = new ArrayList<>();
            for (String broker : f[1].split(",")) {
                String[] idRack = broker.split(":", 2);
                String rack = idRack[1].equals("-") ? null : idRack[1];
                brokers.add(new BrokerMetadata(Integer.parseInt(idRack[0]), Option.apply(rack)));
            }
            out.append(f[0]).append(' ');
            try {
                scala.collection.Map<Object, scala.collection.Seq<Object>> assigned = AdminUtils.assignReplicasToBrokers(
                        CollectionConverters.asScala(brokers), Integer.parseInt(f[2]), Integer.parseInt(f[3]),
                        Integer.parseInt(f[4]), Integer.parseInt(f[5]));
                Map<Integer, String> byPartition = new TreeMap<>();
                for (Map.Entry<Object, scala.collection.Seq<Object>> e : CollectionConverters.asJava(assigned).entrySet()) {
                    StringBuilder replicas = new StringBuilder();
                    for (Object replica : CollectionConverters.asJava(e.getValue())) {
                        if (replicas.length() > 0) replicas.append(',');
                        replicas.append(replica);
                    }
                    byPartition.put((Integer) e.getKey(), replicas.toString());
                }
                StringBuilder plan = new StringBuilder();
                for (Map.Entry<Integer, String> e : byPartition.entrySet()) {
                    if (plan.length() > 0) plan.append(';');
                    plan.append(e.getKey()).append(':').append(e.getValue());
                }
                out.append(plan);
            } catch (RuntimeException e) {
                out.append("ERROR ").append(e.getClass().getSimpleName());
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
