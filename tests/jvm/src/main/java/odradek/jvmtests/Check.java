package odradek.jvmtests;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;

/** A scenario's assertions: a failed one ends the scenario with its message. */
final class Check {
    private Check() {}

    static void that(boolean condition, String message) {
        if (!condition) throw new AssertionError(message);
    }

    static void equal(Object expected, Object actual, String what) {
        if (!Objects.equals(expected, actual)) {
            throw new AssertionError(what + ": expected " + expected + ", got " + actual);
        }
    }

    /** Waits for a condition that the cluster reaches asynchronously (metadata, deletes, reassignments). */
    static void eventually(Supplier<Boolean> condition, Duration timeout, String what) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.get()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for " + what);
            Thread.sleep(100);
        }
    }

    /** What an expected failure threw, unwrapped from ExecutionException and KafkaException wrappers. */
    static Throwable thrown(Runnable action) {
        try {
            action.run();
        } catch (Throwable t) {
            return t;
        }
        throw new AssertionError("expected an exception");
    }

    /** The innermost cause, or the outermost one of the given class if any. */
    static Throwable causeOfClass(Throwable t, Class<?> wanted) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (wanted.isInstance(c)) return c;
        }
        return null;
    }
}
