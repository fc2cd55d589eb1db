import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;

/**
 * The Java AdminClient as the reference: a provisioning job with Java's defaults (createTopics with
 * retryOnQuotaViolation true, default.api.timeout.ms 60000, request.timeout.ms 30000), each topic's outcome
 * printed as one JSON line. Run from the fetched jars, with no build step (a single-file source launch):
 *
 * <pre>
 *   java -cp '.kafka/4.4.0/libs/*' benchmarks/java/Reference.java --bootstrap 127.0.0.1:9092 \
 *       --client-id bench --prefix bench. --topics 300 --partitions 4
 * </pre>
 *
 * Options before the first job: {@code --bootstrap HOST:PORT} (required), {@code --client-id ID},
 * {@code --config KEY=VALUE} (any AdminClient setting, repeatable), {@code --no-connect} (skip reading the
 * cluster first). A job: {@code --prefix P --topics N} (names P000000, P000001, ...) or {@code --names a,b:6,c}
 * (a name may carry its own partition count); {@code --partitions P} (default 1);
 * {@code --batch-size S} (calls of S topics, all made before waiting on any); {@code --timeout-ms T}
 * (CreateTopicsOptions.timeoutMs; default: default.api.timeout.ms); {@code --no-retry}
 * (retryOnQuotaViolation(false)); {@code --close-after-ms T} (close(T) right after the calls instead of
 * waiting); {@code --block-callback-ms T} (the first topic's future gets a done-callback that sleeps T ms).
 * {@code --then} starts the next job, on the same client, once every topic of the previous one has an outcome.
 *
 * Output, one JSON object a line, times in seconds since the epoch: {"event":"connected"} once the client has
 * read the cluster (before any clock starts); per job {"event":"start"}, one line per topic
 * ({"topic", "ok", "at", and for a failure "error" (the exception's class), "retriable", "message",
 * "throttle_time_ms"}), {"event":"done"} with started_at and finished_at; at the end {"event":"metrics"} with
 * the names of the client's metrics that mention throttling, and {"event":"closed"}.
 */
public class Reference {
    static final class Job {
        String prefix = "reference.";
        int topics = 0;
        List<String> names = null;
        int partitions = 1;
        int batchSize = 0;
        Integer timeoutMs = null;
        boolean retry = true;
        Long closeAfterMs = null;
        long blockCallbackMs = 0;

        List<NewTopic> newTopics() {
            List<NewTopic> out = new ArrayList<>();
            if (names != null) {
                for (String name : names) {
                    String[] parts = name.split(":", 2);
                    int count = parts.length > 1 ? Integer.parseInt(parts[1]) : partitions;
                    out.add(new NewTopic(parts[0], count, (short) 1));
                }
                return out;
            }
            for (int i = 0; i < topics; i++) {
                out.add(new NewTopic(String.format("%s%06d", prefix, i), partitions, (short) 1));
            }
            return out;
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "reference");
        List<Job> jobs = new ArrayList<>();
        boolean connect = true;
        Job job = new Job();
        jobs.add(job);
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--bootstrap" -> props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[++i]);
                case "--client-id" -> props.put(AdminClientConfig.CLIENT_ID_CONFIG, args[++i]);
                case "--config" -> {
                    String[] kv = args[++i].split("=", 2);
                    props.put(kv[0], kv[1]);
                }
                case "--no-connect" -> connect = false;
                case "--prefix" -> job.prefix = args[++i];
                case "--topics" -> job.topics = Integer.parseInt(args[++i]);
                case "--names" -> job.names = Arrays.asList(args[++i].split(","));
                case "--partitions" -> job.partitions = Integer.parseInt(args[++i]);
                case "--batch-size" -> job.batchSize = Integer.parseInt(args[++i]);
                case "--timeout-ms" -> job.timeoutMs = Integer.parseInt(args[++i]);
                case "--no-retry" -> job.retry = false;
                case "--close-after-ms" -> job.closeAfterMs = Long.parseLong(args[++i]);
                case "--block-callback-ms" -> job.blockCallbackMs = Long.parseLong(args[++i]);
                case "--then" -> {
                    job = new Job();
                    jobs.add(job);
                }
                default -> throw new IllegalArgumentException("unknown option " + arg);
            }
        }
        if (!props.containsKey(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG)) {
            throw new IllegalArgumentException("--bootstrap HOST:PORT is required");
        }
        Admin admin = Admin.create(props);
        boolean closed = false;
        try {
            if (connect) {
                admin.describeCluster().nodes().get(60, TimeUnit.SECONDS);
                print(Map.of("event", "connected", "at", now()));
            }
            for (int j = 0; j < jobs.size(); j++) {
                closed = run(admin, j, jobs.get(j));
                if (closed) {
                    break;
                }
            }
            List<String> throttleMetrics = new ArrayList<>();
            if (!closed) {
                admin.metrics().keySet().stream()
                    .filter(name -> name.name().contains("throttle"))
                    .forEach(name -> throttleMetrics.add(name.group() + ":" + name.name()));
            }
            print(Map.of("event", "metrics", "throttle_metrics", throttleMetrics));
        } finally {
            if (!closed) {
                admin.close();
            }
            print(Map.of("event", "closed", "at", now()));
        }
    }

    /** One job; true when it closed the client. */
    static boolean run(Admin admin, int index, Job job) throws InterruptedException {
        List<NewTopic> topics = job.newTopics();
        int size = job.batchSize > 0 ? job.batchSize : Math.max(1, topics.size());
        CreateTopicsOptions options = new CreateTopicsOptions().retryOnQuotaViolation(job.retry);
        if (job.timeoutMs != null) {
            options.timeoutMs(job.timeoutMs);
        }
        Map<String, KafkaFuture<Void>> futures = new LinkedHashMap<>();
        Map<String, Double> completedAt = new java.util.concurrent.ConcurrentHashMap<>();
        double startedAt = now();
        print(Map.of("event", "start", "job", index, "at", startedAt));
        for (int first = 0; first < topics.size(); first += size) {
            List<NewTopic> batch = topics.subList(first, Math.min(topics.size(), first + size));
            Map<String, KafkaFuture<Void>> values = admin.createTopics(batch, options).values();
            for (NewTopic topic : batch) {  // a name given twice has one future
                KafkaFuture<Void> future = values.get(topic.name());
                if (futures.putIfAbsent(topic.name(), future) == null) {
                    future.whenComplete((v, e) -> completedAt.put(topic.name(), now()));
                }
            }
        }
        if (job.blockCallbackMs > 0 && !futures.isEmpty()) {
            futures.values().iterator().next().whenComplete((v, e) -> sleep(job.blockCallbackMs));
        }
        if (job.closeAfterMs != null) {
            admin.close(Duration.ofMillis(job.closeAfterMs));
        }
        for (Map.Entry<String, KafkaFuture<Void>> entry : futures.entrySet()) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("job", index);
            line.put("topic", entry.getKey());
            try {
                entry.getValue().get();
                line.put("ok", true);
            } catch (ExecutionException failure) {
                Throwable cause = failure.getCause();
                line.put("ok", false);
                line.put("error", cause.getClass().getSimpleName());
                line.put("retriable", cause instanceof RetriableException);
                line.put("message", String.valueOf(cause.getMessage()));
                if (cause instanceof ThrottlingQuotaExceededException quota) {
                    line.put("throttle_time_ms", quota.throttleTimeMs());
                }
            }
            line.put("at", completedAt.getOrDefault(entry.getKey(), now()));
            print(line);
        }
        double finishedAt = completedAt.values().stream().mapToDouble(Double::doubleValue).max().orElse(now());
        print(Map.of("event", "done", "job", index, "started_at", startedAt, "finished_at", finishedAt));
        return job.closeAfterMs != null;
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static double now() {
        Instant t = Instant.now();
        return t.getEpochSecond() + t.getNano() / 1e9;
    }

    static synchronized void print(Map<String, ?> fields) {
        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<String, ?> field : fields.entrySet()) {
            if (out.length() > 1) {
                out.append(',');
            }
            out.append(json(field.getKey())).append(':').append(json(field.getValue()));
        }
        System.out.println(out.append('}'));
        System.out.flush();
    }

    static String json(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Number || value instanceof Boolean) {
            return value.toString();
        }
        if (value instanceof List<?> list) {
            StringBuilder out = new StringBuilder("[");
            for (Object item : list) {
                out.append(out.length() > 1 ? "," : "").append(json(item));
            }
            return out.append(']').toString();
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toString().toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
