package odradek.jvmtests;

import java.util.Map;

/** One named check against the cluster; returns what the Python side inspects further (topic names...). */
interface Scenario {
    Map<String, Object> run(Env env) throws Exception;
}
