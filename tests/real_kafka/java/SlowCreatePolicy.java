import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.CreateTopicPolicy;

/**
 * A slow controller, the Kafka way: Kafka calls a CreateTopicPolicy on the controller's one event thread, so a
 * policy that sleeps holds the controller itself (every mutation behind it waits unread), which a proxy delaying
 * answers cannot do. A topic named {@code slow-<ms>-...} sleeps that many milliseconds, then is allowed; a topic
 * named {@code refuse-...} is refused with POLICY_VIOLATION and this policy's own message; every other name
 * passes at once. It prints a line to the JVM's stdout as it starts holding the controller. Set with {@code create.topic.policy.class.name=SlowCreatePolicy}.
 */
public class SlowCreatePolicy implements CreateTopicPolicy {
    private static final Pattern SLOW = Pattern.compile("^slow-(\\d+)-.*");

    @Override
    public void configure(Map<String, ?> configs) {
    }

    @Override
    public void validate(RequestMetadata request) throws PolicyViolationException {
        String topic = request.topic();
        if (topic.startsWith("refuse-")) {
            throw new PolicyViolationException("SlowCreatePolicy refuses topics named refuse-*");
        }
        Matcher slow = SLOW.matcher(topic);
        if (slow.matches()) {
            // Tests wait for this line (the JVM's stdout) to know the controller is now held.
            System.out.println("SlowCreatePolicy: holding the controller for " + slow.group(1) + " ms: " + topic);
            System.out.flush();
            try {
                Thread.sleep(Long.parseLong(slow.group(1)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
    }
}
