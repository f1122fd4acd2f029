// NettyWheelSys.java: Netty's HashedWheelTimer behind LatHarness's Sys interface (system netty-wheel).
// Compiled only when netty-common.jar is present (Debian libnetty-java); LatHarness loads it by name.
// Tick 1 ms (the wheel's resolution: its worker sleeps in whole milliseconds), 1024 buckets.
// Fixed rate: the wheel has none, so each run re-arms the task for its next due time
// (first + n * period), the way Netty users write it. execute() is a timeout of 0.

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

public final class NettyWheelSys implements Sys {
    private static final long TICK_NS = 1_000_000;
    private static final int TICKS_PER_WHEEL = 1024;
    private final HashedWheelTimer timer;
    private long sinceDrain = 0;  // calls since the last drain(): the wheel moves 100,000 per tick

    public NettyWheelSys() {
        timer = new HashedWheelTimer(Executors.defaultThreadFactory(), TICK_NS, TimeUnit.NANOSECONDS, TICKS_PER_WHEEL);
        timer.start();
    }

    public Object schedule(Runnable r, long delayNs) {
        sinceDrain++;
        return timer.newTimeout(t -> r.run(), delayNs, TimeUnit.NANOSECONDS);
    }

    /** A task re-armed by each of its runs; cancel() stops the chain. */
    private final class Periodic {
        final Runnable body;
        final long first, period;
        long n = 0;                    // runs so far: touched by the wheel's worker only
        volatile Timeout current;
        volatile boolean cancelled = false;
        Periodic(Runnable body, long first, long period) { this.body = body; this.first = first; this.period = period; }
        void arm() {
            long due = first + n * period;
            current = timer.newTimeout(t -> fire(), due - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (cancelled) current.cancel();
        }
        void fire() {
            if (cancelled) return;
            body.run();
            n++;
            arm();
        }
        boolean cancel() {
            if (cancelled) return false;
            cancelled = true;
            Timeout t = current;
            if (t != null) t.cancel();
            return true;
        }
    }

    public Object scheduleAtFixedRate(Runnable r, long initialDelayNs, long periodNs) {
        Periodic p = new Periodic(r, System.nanoTime() + initialDelayNs, periodNs);
        p.arm();
        return p;
    }

    public void execute(Runnable r) {
        sinceDrain++;
        timer.newTimeout(t -> r.run(), 0, TimeUnit.NANOSECONDS);
    }

    public boolean cancel(Object h) {
        if (h instanceof Periodic) return ((Periodic) h).cancel();
        return ((Timeout) h).cancel();
    }

    public long queueSize() { return timer.pendingTimeouts(); }

    /** No API tells when the worker has moved new timeouts into the wheel (100,000 per tick) or
     *  processed the cancelled ones (each tick): wait that many ticks, then until the pending count
     *  holds still for 5 ticks. */
    public boolean drain(long timeoutNs) throws InterruptedException {
        long giveUp = System.nanoTime() + timeoutNs;
        Thread.sleep((5 + sinceDrain / 100_000) * TICK_NS / 1_000_000);
        sinceDrain = 0;
        long before = timer.pendingTimeouts();
        while (System.nanoTime() < giveUp) {
            Thread.sleep(5 * TICK_NS / 1_000_000);
            long now = timer.pendingTimeouts();
            if (now == before) return true;
            before = now;
        }
        return false;
    }

    public void close() { timer.stop(); }

    public String config() {
        return "\"threads\":1,\"shards\":1,\"wait\":\"sleep\",\"pinned\":false,\"cpus\":[],\"producer_cpu\":-1,"
                + "\"tick_ns\":" + TICK_NS + ",\"ticks_per_wheel\":" + TICKS_PER_WHEEL;
    }
}
