package odradek.jvmtests;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;


/**
 * Runs a group of named scenarios against a cluster in one JVM (start-up costs once per group):
 *   java -cp ... odradek.jvmtests.Main GROUP BOOTSTRAP PREFIX [SCENARIO...]
 * Prints to stdout a JSON line naming the client version, then one JSON line per scenario
 * ({"scenario", "ok", "detail" or "error"}); writes "##scenario NAME" to stderr before each, so the client's
 * log lines there can be told apart per scenario. PREFIX begins every topic, group and user name it makes.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: Main producer|consumer|admin|failover|secure BOOTSTRAP PREFIX [SCENARIO...]");
            System.exit(2);
        }
        Env env = new Env(args[1], args[2]);
        Map<String, Scenario> scenarios = switch (args[0]) {
            case "producer" -> ProducerScenarios.all();
            case "consumer" -> ConsumerScenarios.all();
            case "admin" -> AdminScenarios.all();
            case "failover" -> FailoverScenarios.all();
            case "secure" -> SecureScenarios.all();
            default -> throw new IllegalArgumentException("unknown group " + args[0]);
        };
        List<String> wanted = args.length > 3 ? List.of(args).subList(3, args.length) : List.copyOf(scenarios.keySet());
        System.out.println(Json.write(Map.of("client_version", Compat.clientVersion())));
        for (String name : wanted) {
            Scenario scenario = scenarios.get(name);
            System.err.println("##scenario " + name);
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("scenario", name);
            long started = System.nanoTime();
            try {
                if (scenario == null) throw new IllegalArgumentException("no scenario " + name + " in " + args[0]);
                line.put("detail", scenario.run(env));
                line.put("ok", true);
            } catch (Throwable t) {
                line.put("ok", false);
                line.put("error", describe(t));
                t.printStackTrace();
            }
            line.put("elapsed_ms", (System.nanoTime() - started) / 1_000_000);
            System.out.println(Json.write(line));
            System.out.flush();
        }
        env.close();
        System.exit(0);  // client threads left behind by a failed scenario must not keep the JVM alive
    }

    private static String describe(Throwable t) {
        StringBuilder out = new StringBuilder(t.toString());
        for (Throwable c = t.getCause(); c != null; c = c.getCause()) out.append(" <- ").append(c);
        return out.toString();
    }
}
