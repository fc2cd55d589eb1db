import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;

/**
 * Reads sasl.jaas.config lines as the Java client does (JaasContext, through Kafka's JaasConfig): each input line is
 * one JAAS line in base64 of its UTF-8, and each output line is "OK" followed by its options, name and base64 of the
 * value, tab-separated, or "ERR" when Java refuses it. The CLI's reading is compared with it
 * (tests/test_cli_jaas_on_java.py).
 */
public class JaasRead {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Base64.Encoder encoder = Base64.getEncoder();
        for (String line; (line = in.readLine()) != null; ) {
            String jaas = new String(Base64.getDecoder().decode(line.trim()), StandardCharsets.UTF_8);
            StringBuilder out = new StringBuilder("OK");
            try {
                Map<String, Object> configs = Map.of("sasl.jaas.config", new Password(jaas));
                AppConfigurationEntry entry = JaasContext.loadClientContext(configs).configurationEntries().get(0);
                for (Map.Entry<String, ?> option : new TreeMap<>(entry.getOptions()).entrySet()) {
                    byte[] value = String.valueOf(option.getValue()).getBytes(StandardCharsets.UTF_8);
                    out.append('\t').append(option.getKey()).append('\t').append(encoder.encodeToString(value));
                }
            } catch (RuntimeException refused) {
                out = new StringBuilder("ERR");
            }
            System.out.println(out);
        }
    }
}
