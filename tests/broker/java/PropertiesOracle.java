import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Properties;
import java.util.TreeMap;

/**
 * Reads one base64 text (UTF-8) per line of stdin and writes what java.util.Properties.load(Reader) makes of it:
 * "OK" and a key:value pair per property, sorted by key, each string as "x" and four hex digits per UTF-16 unit
 * (so lone surrogates survive),
 * or "ERR" and the exception's message. Run with the JDK's source launcher: java PropertiesOracle.java.
 */
public class PropertiesOracle {
    public static void main(String[] args) throws Exception {
        Base64.Decoder decoder = Base64.getDecoder();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String text = new String(decoder.decode(line), StandardCharsets.UTF_8);
            Properties props = new Properties();
            try {
                props.load(new StringReader(text));
            } catch (IllegalArgumentException e) {
                out.append("ERR ").append(e.getMessage()).append('\n');
                continue;
            }
            TreeMap<String, String> sorted = new TreeMap<>();
            for (String name : props.stringPropertyNames()) {
                sorted.put(name, props.getProperty(name));
            }
            out.append("OK");
            sorted.forEach((k, v) -> out.append(' ').append(hex(k)).append(':').append(hex(v)));
            out.append('\n');
        }
        System.out.print(out);
    }

    private static String hex(String text) {
        StringBuilder units = new StringBuilder("x");
        for (char c : text.toCharArray()) {
            units.append(String.format("%04x", (int) c));
        }
        return units.toString();
    }
}
