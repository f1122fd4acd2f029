// Sys.java: what every workload of LatHarness needs from a scheduler (the Java side of
// perf/workloads/system.hpp).

public interface Sys {
    Object schedule(Runnable r, long delayNs);
    /** Java's schedulers take relative delays only: deadline - now. */
    default Object scheduleAt(Runnable r, long deadlineNs) { return schedule(r, deadlineNs - System.nanoTime()); }
    Object scheduleAtFixedRate(Runnable r, long initialDelayNs, long periodNs);
    void execute(Runnable r);
    boolean cancel(Object handle);
    long queueSize();
    /** Every call made before has been applied. */
    boolean drain(long timeoutNs) throws InterruptedException;
    void close() throws InterruptedException;
    /** Fields for the "config" object, without braces. */
    String config();
}
