// LatHarness.java: the standard workloads W1..W8 (docs/workloads.md) on Java's schedulers, printing
// the same JSON line per run as kairos-lat does for the C++ systems. kairos-lat compiles and runs
// it when javac is present; it can also run alone:
//
//   javac -d out -cp /usr/share/java/netty-common.jar LatHarness.java NettyWheelSys.java
//   java -cp out:/usr/share/java/netty-common.jar LatHarness system=java-stpe-1 workload=W3
//
// Systems: java-stpe-1, java-stpe-2 (ScheduledThreadPoolExecutor, 1 or 2 core threads, started
// before the run), netty-wheel (io.netty.util.HashedWheelTimer, 1 ms tick, 1024 buckets; loaded
// by name, so this file compiles without Netty).
// Every run is preceded by a warm-up pass of the same workload at 1/10 of its size on a fresh
// scheduler (JIT compilation), whose result is not printed; warmup=0 turns it off.
// Delays come from SplitMix64 with the same seeds as kairos-lat, so both see the same sequence.

import java.io.BufferedReader;
import java.io.FileReader;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

final class StpeSys implements Sys {
    private final ScheduledThreadPoolExecutor stpe;
    private final int threads;

    StpeSys(int threads, boolean removeOnCancel) {
        this.threads = threads;
        stpe = new ScheduledThreadPoolExecutor(threads);
        stpe.setRemoveOnCancelPolicy(removeOnCancel);
        stpe.prestartAllCoreThreads();
    }
    public Object schedule(Runnable r, long delayNs) { return stpe.schedule(r, delayNs, TimeUnit.NANOSECONDS); }
    public Object scheduleAtFixedRate(Runnable r, long initialDelayNs, long periodNs) {
        return stpe.scheduleAtFixedRate(r, initialDelayNs, periodNs, TimeUnit.NANOSECONDS);
    }
    public void execute(Runnable r) { stpe.execute(r); }
    public boolean cancel(Object h) { return ((ScheduledFuture<?>) h).cancel(false); }
    public long queueSize() { return stpe.getQueue().size(); }
    public boolean drain(long timeoutNs) { return true; }
    public void close() throws InterruptedException {
        stpe.shutdownNow();
        stpe.awaitTermination(30, TimeUnit.SECONDS);
    }
    public String config() {
        return "\"threads\":" + threads + ",\"shards\":1,\"wait\":\"park\",\"pinned\":false,\"cpus\":[],\"producer_cpu\":-1";
    }
}

public final class LatHarness {
    // ---- arguments ------------------------------------------------------------------------------
    private final Map<String, String> args = new HashMap<>();

    private long num(String key, long dflt) {
        String v = args.get(key);
        return v == null ? dflt : Long.parseLong(v);
    }

    private String str(String key, String dflt) { return args.getOrDefault(key, dflt); }

    // ---- shared definitions (the same as perf/workloads/result.hpp) ------------------------------
    static final class SplitMix64 {
        private long x;
        SplitMix64(long seed) { x = seed; }
        long next() {
            long z = (x += 0x9E3779B97F4A7C15L);
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }
        long uniform(long lo, long hi) { return lo + Long.remainderUnsigned(next(), hi - lo + 1); }
    }

    /** One iteration in each block of `every`, at a random position in the block (as result.hpp). */
    static final class SampleClock {
        private final long every;
        private final SplitMix64 rng;
        private long pick;
        SampleClock(long every, long seed) { this.every = every; rng = new SplitMix64(seed); nextBlock(0); }
        private void nextBlock(long blockStart) { pick = blockStart + Long.remainderUnsigned(rng.next(), every); }
        boolean sampled(long i) {
            if (i != pick) return false;
            nextBlock(i - i % every + every);
            return true;
        }
    }

    static long[] seededDelays(int n, long lo, long hi, long seed) {
        SplitMix64 g = new SplitMix64(seed);
        long[] d = new long[n];
        for (int i = 0; i < n; i++) d[i] = g.uniform(lo, hi);
        return d;
    }

    static long nearestRank(long[] sorted, double p) {
        if (sorted.length == 0) return 0;
        double rank = p / 100.0 * sorted.length;
        long i = (long) rank;
        if (i < rank) i++;
        if (i == 0) i = 1;
        return sorted[(int) Math.min(i, sorted.length) - 1];
    }

    /** A JSON object under construction, fields in insertion order. */
    static final class Json {
        private final StringBuilder sb = new StringBuilder("{");
        private Json key(String k) {
            if (sb.length() > 1) sb.append(',');
            sb.append('"').append(k).append("\":");
            return this;
        }
        Json put(String k, long v) { key(k).append(v); return this; }
        Json put(String k, double v) {
            key(k).append(Double.isFinite(v) ? Double.toString(v) : "null");
            return this;
        }
        Json put(String k, String v) { key(k).append('"').append(v).append('"'); return this; }
        Json raw(String k, String json) { key(k).append(json); return this; }
        private StringBuilder append(Object o) { return sb.append(o); }
        @Override public String toString() { return sb.toString() + "}"; }
    }

    static void percentiles(Json f, long[] samples, boolean lateness) { percentiles(f, samples, lateness, ""); }

    static void percentiles(Json f, long[] samples, boolean lateness, String prefix) {
        Arrays.sort(samples);
        f.put(prefix + "samples", samples.length);
        f.put(prefix + "p50_ns", nearestRank(samples, 50));
        f.put(prefix + "p90_ns", nearestRank(samples, 90));
        f.put(prefix + "p99_ns", nearestRank(samples, 99));
        f.put(prefix + "p99_9_ns", nearestRank(samples, 99.9));
        f.put(prefix + "p99_99_ns", nearestRank(samples, 99.99));
        f.put(prefix + "max_ns", samples.length == 0 ? 0 : samples[samples.length - 1]);
        if (lateness) {
            int early = 0;
            while (early < samples.length && samples[early] < 0) early++;
            f.put("early_fires", early);
            f.put("min_ns", samples.length == 0 ? 0 : samples[0]);
        }
    }

    static void sleepUntil(long t) {
        for (long now = System.nanoTime(); now < t; now = System.nanoTime()) LockSupport.parkNanos(t - now);
    }

    /** Waits until every slot is set (non-zero) or giveUp passes; returns the unset count. */
    static int waitAll(AtomicLongArray slots, long giveUpNs) throws InterruptedException {
        int next = 0;
        for (;;) {
            while (next < slots.length() && slots.get(next) != 0) next++;
            if (next == slots.length()) return 0;
            if (System.nanoTime() >= giveUpNs) break;
            Thread.sleep(1);
        }
        int missing = 0;
        for (int i = next; i < slots.length(); i++) if (slots.get(i) == 0) missing++;
        return missing;
    }

    static long residentBytes() {
        try (BufferedReader r = new BufferedReader(new FileReader("/proc/self/statm"))) {
            String[] f = r.readLine().trim().split("\\s+");
            return Long.parseLong(f[1]) * 4096L;
        } catch (Exception e) {
            return 0;
        }
    }

    static long usedHeapAfterGc() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    // ---- systems ----------------------------------------------------------------------------------
    private Sys makeSys(String system, boolean removeOnCancel) throws Exception {
        switch (system) {
            case "java-stpe-1": return new StpeSys(1, removeOnCancel);
            case "java-stpe-2": return new StpeSys(2, removeOnCancel);
            case "netty-wheel":
                return (Sys) Class.forName("NettyWheelSys").getDeclaredConstructor().newInstance();
            default: throw new IllegalArgumentException("unknown system " + system);
        }
    }

    // ---- workloads --------------------------------------------------------------------------------
    // Each returns the "parameters" and the figures; `scale` shrinks the sizes for the warm-up.

    private String[] w1(Sys sys, int scale) throws Exception {
        final int producers = (int) num("producers", 1);
        final int calls = (int) (num("calls_per_producer", 1_000_000) / scale);
        final long delay = num("delay_ns", 3_600_000_000_000L);
        final int every = 64;
        final AtomicLongArray sink = new AtomicLongArray(1024);
        final long[][] samples = new long[producers][];
        final long[] ends = new long[producers];
        final AtomicInteger ready = new AtomicInteger();
        final boolean[] go = {false};
        final Object lock = new Object();
        Thread[] ts = new Thread[producers];
        for (int k = 0; k < producers; k++) {
            final int kk = k;
            ts[k] = new Thread(() -> {
                long[] mine = new long[calls / every + 1];
                int m = 0;
                SampleClock sampleClock = new SampleClock(every, 1 + kk);
                ready.incrementAndGet();
                synchronized (lock) {
                    while (!go[0]) {
                        try { lock.wait(); } catch (InterruptedException e) { return; }
                    }
                }
                for (int i = 0; i < calls; i++) {
                    final int slot = i & 1023;
                    Runnable body = () -> sink.lazySet(slot, System.nanoTime());
                    if (sampleClock.sampled(i)) {
                        long a = System.nanoTime();
                        sys.schedule(body, delay);
                        mine[m++] = System.nanoTime() - a;
                    } else {
                        sys.schedule(body, delay);
                    }
                }
                ends[kk] = System.nanoTime();
                samples[kk] = Arrays.copyOf(mine, m);
            });
            ts[k].start();
        }
        while (ready.get() != producers) Thread.yield();
        Thread.sleep(5);  // every producer is in wait()
        long start;
        synchronized (lock) {
            start = System.nanoTime();
            go[0] = true;
            lock.notifyAll();
        }
        for (Thread t : ts) t.join();
        long end = Arrays.stream(ends).max().getAsLong();
        double total = (double) producers * calls;
        Json p = new Json().put("producers", producers).put("calls_per_producer", calls)
                .put("delay_ns", delay).put("sample_every", every);
        Json f = new Json();
        f.put("submits_per_s", total / ((end - start) * 1e-9));
        f.put("ns_per_submit", (double) (end - start) * producers / total);
        percentiles(f, Arrays.stream(samples).flatMapToLong(Arrays::stream).toArray(), false);
        f.put("pending_at_end", sys.queueSize());
        return new String[] {p.toString(), f.toString()};
    }

    private String[] w2(Sys sys, int scale) throws Exception {
        final int iterations = (int) (num("iterations", 1_000_000) / scale);
        final int window = (int) num("window", 1024);
        final long delay = num("delay_ns", 10_000_000_000L);
        final int every = 64;
        AtomicLongArray sink = new AtomicLongArray(window);
        Object[] ring = new Object[window];
        long[] samples = new long[iterations / every + 1];
        int m = 0;
        long cancelled = 0;
        SampleClock sampleClock = new SampleClock(every, 7);
        long start = System.nanoTime();
        for (int i = 0; i < iterations; i++) {
            final int k = i % window;
            Runnable body = () -> sink.lazySet(k, System.nanoTime());
            if (sampleClock.sampled(i)) {
                long a = System.nanoTime();
                Object h = sys.schedule(body, delay);
                if (i >= window && sys.cancel(ring[k])) cancelled++;
                ring[k] = h;
                samples[m++] = System.nanoTime() - a;
            } else {
                Object h = sys.schedule(body, delay);
                if (i >= window && sys.cancel(ring[k])) cancelled++;
                ring[k] = h;
            }
        }
        long end = System.nanoTime();
        Json p = new Json().put("iterations", iterations).put("window", window).put("delay_ns", delay)
                .put("remove_on_cancel", 1);
        Json f = new Json();
        f.put("pairs_per_s", iterations / ((end - start) * 1e-9));
        f.put("ns_per_pair", (double) (end - start) / iterations);
        percentiles(f, Arrays.copyOf(samples, m), false);
        f.put("cancels_won", cancelled);
        boolean drained = sys.drain(30_000_000_000L);
        f.put("drained", drained ? 1 : 0);
        f.put("pending_at_end", sys.queueSize());
        return new String[] {p.toString(), f.toString()};
    }

    private Json w3Params(int count, long interval, long lo, long hi, long seed) {
        return new Json().put("count", count).put("interval_ns", interval).put("min_delay_ns", lo)
                .put("max_delay_ns", hi).put("seed", seed);
    }

    private String[] w3(Sys sys, int scale) throws Exception {
        final int count = (int) (num("count", 200_000) / scale);
        final long interval = num("interval_ns", 50_000);
        final long lo = num("min_delay_ns", 100_000), hi = num("max_delay_ns", 10_000_000);
        final long seed = num("seed", 42);
        long[] delays = seededDelays(count, lo, hi, seed);
        long[] deadlines = new long[count], lag = new long[count];
        AtomicLongArray starts = new AtomicLongArray(count);
        long firstSlot = System.nanoTime() + 1_000_000, lastSubmit = firstSlot;
        for (int i = 0; i < count; i++) {
            long slotTime = firstSlot + (long) i * interval;
            sleepUntil(slotTime);
            final int ii = i;
            long t0 = System.nanoTime();
            sys.schedule(() -> starts.lazySet(ii, System.nanoTime()), delays[i]);
            deadlines[i] = t0 + delays[i];
            lag[i] = t0 - slotTime;
            lastSubmit = t0;
        }
        int missing = waitAll(starts, System.nanoTime() + hi + 5_000_000_000L);
        long[] late = new long[count - missing];
        int n = 0;
        for (int i = 0; i < count; i++) if (starts.get(i) != 0) late[n++] = starts.get(i) - deadlines[i];
        Json f = new Json();
        percentiles(f, late, true);
        f.put("missing", missing);
        Arrays.sort(lag);
        f.put("pacing_lag_p99_ns", nearestRank(lag, 99));
        f.put("pacing_lag_max_ns", lag.length == 0 ? 0 : lag[lag.length - 1]);
        f.put("submissions_per_s", count / ((lastSubmit - firstSlot) * 1e-9));
        return new String[] {w3Params(count, interval, lo, hi, seed).toString(), f.toString()};
    }

    private String[] w4(Sys sys, int scale) throws Exception {
        final int tasks = (int) num("tasks", 16);
        final long period = num("period_ns", 1_000_000), initial = num("initial_delay_ns", 1_000_000);
        final long duration = num("duration_ns", 5_000_000_000L) / scale, grace = num("grace_ns", 50_000_000);
        final int runs = (int) (duration / period);
        final int cap = runs + (int) (2 * grace / period) + 16;
        final AtomicLongArray[] starts = new AtomicLongArray[tasks];
        final int[] counts = new int[tasks];  // written by the task's own runs, which never overlap
        final long[] t0 = new long[tasks];
        Object[] handles = new Object[tasks];
        for (int k = 0; k < tasks; k++) {
            final int kk = k;
            starts[k] = new AtomicLongArray(cap);
            t0[k] = System.nanoTime();
            handles[k] = sys.scheduleAtFixedRate(() -> {
                long t = System.nanoTime();
                int c = counts[kk];
                if (c < cap) starts[kk].lazySet(c, t);
                counts[kk] = c + 1;
            }, initial, period);
        }
        for (int k = 0; k < tasks; k++) {
            sleepUntil(t0[k] + initial + (long) (runs - 1) * period + grace);
            sys.cancel(handles[k]);
        }
        sys.drain(5_000_000_000L);
        Thread.sleep(2 * period / 1_000_000 + 1);
        long[] late = new long[tasks * runs];
        int n = 0, minRuns = runs, maxRuns = 0;
        long total = 0;
        for (int k = 0; k < tasks; k++) {
            int c = 0;
            for (int i = 0; i < runs && starts[k].get(i) != 0; i++, c++)
                late[n++] = starts[k].get(i) - (t0[k] + initial + (long) i * period);
            minRuns = Math.min(minRuns, c);
            maxRuns = Math.max(maxRuns, c);
            total += c;
        }
        Json p = new Json().put("tasks", tasks).put("period_ns", period).put("initial_delay_ns", initial)
                .put("duration_ns", duration).put("expected_runs_per_task", runs);
        Json f = new Json();
        percentiles(f, Arrays.copyOf(late, n), true);
        f.put("runs_per_task", (double) total / tasks);
        f.put("runs_per_task_min", minRuns);
        f.put("runs_per_task_max", maxRuns);
        f.put("missed_runs", (long) tasks * runs - total);
        return new String[] {p.toString(), f.toString()};
    }

    private String[] w5(Sys sys, int scale) throws Exception {
        final int timers = (int) (num("timers", 1_000_000) / scale);
        final long lo = num("min_delay_ns", 3_600_000_000_000L), hi = num("max_delay_ns", 7_200_000_000_000L);
        final long seed = num("seed", 5);
        long[] delays = seededDelays(timers, lo, hi, seed);
        Object[] handles = new Object[timers];
        AtomicLongArray sink = new AtomicLongArray(1024);
        sys.drain(5_000_000_000L);
        long heapBefore = usedHeapAfterGc();
        long rssBefore = residentBytes();
        long t0 = System.nanoTime();
        for (int i = 0; i < timers; i++) {
            final int slot = i & 1023;
            handles[i] = sys.schedule(() -> sink.lazySet(slot, System.nanoTime()), delays[i]);
        }
        long t1 = System.nanoTime();
        boolean drained = sys.drain(120_000_000_000L);
        long t2 = System.nanoTime();
        long rssAfter = residentBytes();
        long heapAfter = usedHeapAfterGc();
        long pending = sys.queueSize();
        long cancelled = 0;
        long c0 = System.nanoTime();
        for (int i = 0; i < timers; i++) if (sys.cancel(handles[i])) cancelled++;
        long c1 = System.nanoTime();
        drained = sys.drain(120_000_000_000L) && drained;
        long c2 = System.nanoTime();
        Json p = new Json().put("timers", timers).put("min_delay_ns", lo).put("max_delay_ns", hi)
                .put("seed", seed).put("remove_on_cancel", 1);
        Json f = new Json();
        f.put("inserts_per_s", timers / ((t1 - t0) * 1e-9));
        f.put("inserts_applied_per_s", timers / ((t2 - t0) * 1e-9));
        f.put("bytes_per_timer", (double) (heapAfter - heapBefore) / timers);
        f.put("rss_bytes_per_timer", (double) (rssAfter - rssBefore) / timers);
        f.put("rss_growth_bytes", rssAfter - rssBefore);
        f.put("pending_after_inserts", pending);
        f.put("cancels_per_s", timers / ((c1 - c0) * 1e-9));
        f.put("cancels_applied_per_s", timers / ((c2 - c0) * 1e-9));
        f.put("cancels_won", cancelled);
        f.put("pending_at_end", sys.queueSize());
        f.put("drained", drained ? 1 : 0);
        return new String[] {p.toString(), f.toString()};
    }

    private String[] w6(Sys sys, int scale) throws Exception {
        final int tasks = (int) (num("tasks", 1_000_000) / scale);
        AtomicLongArray starts = new AtomicLongArray(tasks);
        long first = System.nanoTime();
        for (int i = 0; i < tasks; i++) {
            final int ii = i;
            sys.execute(() -> starts.lazySet(ii, System.nanoTime()));
        }
        long submitted = System.nanoTime();
        int missing = waitAll(starts, System.nanoTime() + 60_000_000_000L);
        long last = first;
        for (int i = 0; i < tasks; i++) last = Math.max(last, starts.get(i));
        Json f = new Json();
        f.put("tasks_per_s", (tasks - missing) / ((last - first) * 1e-9));
        f.put("submits_per_s", tasks / ((submitted - first) * 1e-9));
        f.put("first_submit_to_last_start_ns", last - first);
        f.put("missing", missing);
        return new String[] {new Json().put("tasks", tasks).toString(), f.toString()};
    }

    private String[] w7(Sys sys, int scale) throws Exception {
        final int tasks = (int) (num("tasks", 100_000) / scale);
        final long ahead = num("ahead_ns", 20_000_000);
        AtomicLongArray starts = new AtomicLongArray(tasks);
        final long deadline = System.nanoTime() + ahead;
        long first = System.nanoTime();
        for (int i = 0; i < tasks; i++) {
            final int ii = i;
            sys.scheduleAt(() -> starts.lazySet(ii, System.nanoTime()), deadline);
        }
        long submitted = System.nanoTime();
        int missing = waitAll(starts, deadline + 30_000_000_000L);
        long[] v = new long[tasks - missing];
        int n = 0, outOfOrder = 0, early = 0;
        long last = 0, firstStart = Long.MAX_VALUE, runningMax = 0;
        for (int i = 0; i < tasks; i++) {
            long s = starts.get(i);
            if (s == 0) continue;
            v[n++] = s;
            if (s < runningMax) outOfOrder++;
            if (s < deadline) early++;
            runningMax = Math.max(runningMax, s);
            last = Math.max(last, s);
            firstStart = Math.min(firstStart, s);
        }
        Json p = new Json().put("tasks", tasks).put("ahead_ns", ahead);
        Json f = new Json();
        f.put("absolute_deadlines", 0);
        f.put("inversions", countInversions(v));
        f.put("out_of_order_tasks", outOfOrder);
        f.put("deadline_to_last_start_ns", last - deadline);
        f.put("deadline_to_first_start_ns", firstStart - deadline);
        f.put("early_fires", early);
        f.put("submit_ns", submitted - first);
        f.put("missing", missing);
        return new String[] {p.toString(), f.toString()};
    }

    /** W8 heartbeat (perf/workloads/w8_heartbeat.hpp): `sessions` idle timeouts, each moved on every
     *  message of its session; messages open loop at `rate`, in rounds over the active sessions in
     *  a fresh random order; every `quiet_every_ns` one more session goes quiet and must time out
     *  `timeout_ns` after its last message. Modes (w8_mode):
     *    cancel  cancel the session's timeout and schedule a new one (what kairos's peers do);
     *    lazy    Netty's IdleStateHandler way: a message only stores its time; the timeout, when it
     *            fires, schedules itself again for the rest of the window if a message came since.
     *  The random order comes from SplitMix64, not C++'s mt19937_64: the same workload, not the same
     *  sequence. */
    private String[] w8(Sys sys, int scale) throws Exception {
        final int sessions = (int) num("sessions", 10_000);
        final double rate = num("rate", 1_000_000);
        final long timeout = num("timeout_ns", 100_000_000L);
        final long quietEvery = num("quiet_every_ns", 100_000_000L);
        final long duration = num("duration_ns", 10_000_000_000L) / scale;
        final long seed = num("seed", 8);
        final boolean lazy = str("w8_mode", "cancel").equals("lazy");
        final int every = 64;
        final AtomicLongArray firedAt = new AtomicLongArray(sessions);
        final AtomicLongArray fires = new AtomicLongArray(sessions);
        final AtomicLongArray lastMessage = new AtomicLongArray(sessions);  // written by the producer
        final Object[] handle = new Object[sessions];
        final boolean[] quiet = new boolean[sessions];
        final Runnable[] fire = new Runnable[sessions];
        for (int i = 0; i < sessions; i++) {
            final int ii = i;
            if (!lazy) {
                fire[i] = () -> { firedAt.lazySet(ii, System.nanoTime()); fires.incrementAndGet(ii); };
            } else {
                fire[i] = new Runnable() {
                    public void run() {
                        long now = System.nanoTime();
                        long rest = lastMessage.get(ii) + timeout - now;
                        if (rest > 0) { sys.schedule(this, rest); return; }  // a message came since
                        firedAt.lazySet(ii, now);
                        fires.incrementAndGet(ii);
                    }
                };
            }
        }
        SplitMix64 rng = new SplitMix64(seed);
        int[] active = new int[sessions];
        for (int i = 0; i < sessions; i++) active[i] = i;
        int activeCount = sessions;
        long rssBefore = residentBytes();
        long t0 = System.nanoTime();
        for (int i = 0; i < sessions; i++) {
            lastMessage.set(i, t0);
            handle[i] = sys.schedule(fire[i], timeout);
        }
        long[] samples = new long[(int) (rate * duration * 1e-9 / every) + 16];
        int m = 0;
        SampleClock sampleClock = new SampleClock(every, 11);
        final double nsPerMessage = 1e9 / rate;
        int roundPos = activeCount;
        long nextQuiet = t0 + quietEvery;
        long messages = 0, end = t0 + duration, now = t0;
        while (now < end) {
            long due = t0 + (long) (messages * nsPerMessage);
            while ((now = System.nanoTime()) < due) Thread.onSpinWait();
            if (now >= nextQuiet && activeCount > 1) {
                int k = (int) Long.remainderUnsigned(rng.next(), activeCount);
                quiet[active[k]] = true;
                active[k] = active[--activeCount];
                roundPos = activeCount;
                nextQuiet += quietEvery;
            }
            if (roundPos >= activeCount) {
                for (int k = activeCount - 1; k > 0; k--) {
                    int j = (int) Long.remainderUnsigned(rng.next(), k + 1);
                    int x = active[k]; active[k] = active[j]; active[j] = x;
                }
                roundPos = 0;
            }
            int i = active[roundPos++];
            boolean sampled = sampleClock.sampled(messages);
            long a = sampled ? System.nanoTime() : 0;
            if (lazy) {
                lastMessage.set(i, now);
            } else {
                sys.cancel(handle[i]);
                handle[i] = sys.schedule(fire[i], timeout);
                lastMessage.set(i, now);
            }
            if (sampled && m < samples.length) samples[m++] = System.nanoTime() - a;
            messages++;
        }
        long sentUntil = System.nanoTime();
        long rssAfter = residentBytes();
        sleepUntil(sentUntil + timeout + 200_000_000L);
        long[] late = new long[sessions];
        int n = 0;
        long quietCount = 0, wrong = 0, missed = 0, early = 0;
        for (int i = 0; i < sessions; i++) {
            long f = fires.get(i);
            if (!quiet[i]) {
                if (f > 1) wrong += f - 1;
                if (f > 0 && firedAt.get(i) < lastMessage.get(i) + timeout) wrong++;
                continue;
            }
            quietCount++;
            if (f == 0) { missed++; continue; }
            if (f > 1) wrong += f - 1;
            long l = firedAt.get(i) - (lastMessage.get(i) + timeout);
            if (l < 0) early++;
            late[n++] = l;
        }
        if (!lazy) for (Object h : handle) sys.cancel(h);
        double secs = (sentUntil - t0) * 1e-9;
        Json p = new Json().put("sessions", sessions).put("rate", rate).put("timeout_ns", timeout)
                .put("quiet_every_ns", quietEvery).put("duration_ns", duration).put("seed", seed);
        Json f = new Json();
        f.put("mode", lazy ? "lazy (IdleStateHandler)" : "cancel+schedule");
        f.put("rearms_per_s", messages / secs);
        f.put("messages", messages);
        percentiles(f, Arrays.copyOf(samples, m), false, "rearm_");
        f.put("quiet_sessions", quietCount);
        f.put("wrong_fires", wrong);
        f.put("missed", missed);
        f.put("early_fires", early);
        percentiles(f, Arrays.copyOf(late, n), false, "lateness_");
        f.put("rss_growth_bytes", rssAfter - rssBefore);
        return new String[] {p.toString(), f.toString()};
    }

    /** Pairs i < j with v[j] < v[i] (bottom-up merge sort); sorts v. */
    static long countInversions(long[] v) {
        long[] a = v, tmp = new long[v.length];
        long inv = 0;
        for (int width = 1; width < a.length; width *= 2) {
            for (int lo = 0; lo < a.length; lo += 2 * width) {
                int mid = Math.min(lo + width, a.length), hi = Math.min(lo + 2 * width, a.length);
                int x = lo, y = mid, o = lo;
                while (x < mid && y < hi) {
                    if (a[y] < a[x]) {
                        inv += mid - x;
                        tmp[o++] = a[y++];
                    } else {
                        tmp[o++] = a[x++];
                    }
                }
                while (x < mid) tmp[o++] = a[x++];
                while (y < hi) tmp[o++] = a[y++];
            }
            long[] s = a; a = tmp; tmp = s;
        }
        return inv;
    }

    private static final String[][] NAMES = {
        {"W1", "submit"}, {"W2", "timeout-churn"}, {"W3", "lateness"}, {"W4", "periodic"},
        {"W5", "scale"}, {"W6", "fire-throughput"}, {"W7", "fifo-burst"}, {"W8", "heartbeat"}};

    private String[] run(String workload, Sys sys, int scale) throws Exception {
        switch (workload) {
            case "W1": return w1(sys, scale);
            case "W2": return w2(sys, scale);
            case "W3": return w3(sys, scale);
            case "W4": return w4(sys, scale);
            case "W5": return w5(sys, scale);
            case "W6": return w6(sys, scale);
            case "W7": return w7(sys, scale);
            case "W8": return w8(sys, scale);
            default: throw new IllegalArgumentException("unknown workload " + workload);
        }
    }

    private void main() throws Exception {
        String system = str("system", "java-stpe-1");
        String workload = str("workload", "W1");
        boolean removeOnCancel = workload.equals("W2") || workload.equals("W5");
        if (num("warmup", 1) != 0) {
            Sys warm = makeSys(system, removeOnCancel);
            run(workload, warm, 10);
            warm.close();
        }
        Sys sys = makeSys(system, removeOnCancel);
        String[] pf = run(workload, sys, 1);
        sys.close();
        String name = "";
        for (String[] n : NAMES) if (n[0].equals(workload)) name = n[1];
        String figures = pf[1].substring(1, pf[1].length() - 1);
        String line = "{\"workload\":\"" + workload + "\",\"name\":\"" + name + "\",\"system\":\"" + system
                + "\",\"config\":{" + sys.config() + ",\"java\":\"" + System.getProperty("java.version")
                + "\"},\"parameters\":" + pf[0] + "," + figures + "}";
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] argv) throws Exception {
        LatHarness h = new LatHarness();
        for (String a : argv) {
            int eq = a.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("arguments are key=value, got " + a);
            h.args.put(a.substring(0, eq), a.substring(eq + 1));
        }
        h.main();
        System.exit(0);
    }
}
