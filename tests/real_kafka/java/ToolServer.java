import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

import org.apache.kafka.common.utils.internals.Exit;

/**
 * Runs Kafka's command line tools (TopicCommand = kafka-topics.sh, ConfigCommand = kafka-configs.sh) many times in
 * one long-lived JVM, so that a test pays the JVM's start once. One request per line on stdin: base64 fields
 * separated by spaces, the tool's main class first, then its arguments. One answer per line on stdout:
 * {@code EXIT_CODE BASE64(stdout) BASE64(stderr)}, what the tool printed and the code kafka-*.sh would exit with
 * (Kafka's tools exit through Exit, whose procedure is replaced here). Log output goes to the tool's stderr as
 * kafka-*.sh's tools-log4j2.yaml sends it (WARN and above), when log4j2 is configured with a console appender
 * that follows System.err (tests/real_kafka/tools.py does).
 */
public class ToolServer {
    private static final class ExitCalled extends RuntimeException {
        final int code;

        ExitCalled(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    private static final Integer[] firstExit = new Integer[1];

    public static void main(String[] args) throws Exception {
        PrintStream answers = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
        // A tool may call Exit more than once: TopicCommand.execute exits in a finally block, its caller catches
        // the Throwable, prints it and exits 1. The first exit is the script's; whatever is printed after it is
        // dropped, as it would never be printed by a process that had exited.
        PrintStream discard = new PrintStream(OutputStream.nullOutputStream());
        Exit.setExitProcedure((code, message) -> {
            if (firstExit[0] == null) {
                firstExit[0] = code;
                System.out.flush();
                System.err.flush();
                System.setOut(discard);
                System.setErr(discard);
            }
            throw new ExitCalled(code);
        });
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Base64.Decoder decoder = Base64.getDecoder();
        Base64.Encoder encoder = Base64.getEncoder();
        String line;
        while ((line = requests.readLine()) != null) {
            String[] fields = line.trim().split(" ");
            String[] decoded = new String[fields.length];
            for (int i = 0; i < fields.length; i++) {
                decoded[i] = new String(decoder.decode(fields[i]), StandardCharsets.UTF_8);
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream savedOut = System.out;
            PrintStream savedErr = System.err;
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code = 0;
            firstExit[0] = null;
            try {
                Method main = Class.forName(decoded[0]).getMethod("main", String[].class);
                main.invoke(null, (Object) Arrays.copyOfRange(decoded, 1, decoded.length));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof ExitCalled) {
                    code = firstExit[0];
                } else {
                    cause.printStackTrace();
                    code = 1;
                }
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(savedOut);
                System.setErr(savedErr);
            }
            answers.println(code + " " + encoder.encodeToString(out.toByteArray()) + " " + encoder.encodeToString(err.toByteArray()));
        }
    }
}
