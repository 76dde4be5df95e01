// The Admin calls kafka-configs.sh makes for SCRAM users, with the Java client (kafka-clients).
// Usage: java [-Dclient.props=<key=value lines>] ScramAdmin <bootstrap> <command>...
// (client.props adds settings to the admin client, e.g. a SCRAM login). Each command is one argument,
// its words separated by spaces, run in order; each prints what kafka-configs.sh would, or
// "error <exception>: <message>" when the call fails:
//   "alter <user> <MECHANISM=[iterations=N,password=P]>..."  kafka-configs --alter --add-config ...:
//       one alterUserScramCredentials call with an upsertion per mechanism (iterations default 4096;
//       kafka-configs also refuses fewer than 4096 itself, which this leaves to the broker);
//   "delete <user> <MECHANISM>..."  kafka-configs --alter --delete-config <MECHANISM>;
//   "describe [<user>]"  kafka-configs --describe --entity-type users [--entity-name <user>]:
//       describeClientQuotas for the user, then describeUserScramCredentials;
//   "login <MECHANISM> <user> <password>"  a SCRAM login (describeCluster): "login ok" or the error.
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeUserScramCredentialsResult;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

public class ScramAdmin {
    static final Pattern CREDENTIAL = Pattern.compile("(?:iterations=(\\-?[0-9]*),)?password=(.*)");

    public static void main(String[] args) throws Exception {
        Properties common = new Properties();
        common.put("bootstrap.servers", args[0]);
        common.put("default.api.timeout.ms", "20000");
        common.put("request.timeout.ms", "10000");
        for (String line : System.getProperty("client.props", "").split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) common.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
        }
        try (Admin admin = Admin.create(common)) {
            for (String command : Arrays.copyOfRange(args, 1, args.length)) {
                String[] words = command.split(" ");
                try {
                    run(admin, common, words);
                } catch (ExecutionException e) {
                    System.out.println("error " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
                }
            }
        }
    }

    static void run(Admin admin, Properties common, String[] words) throws Exception {
        List<String> rest = Arrays.asList(words).subList(Math.min(2, words.length), words.length);
        switch (words[0]) {
            case "alter": alter(admin, words[1], rest); break;
            case "delete": delete(admin, words[1], rest); break;
            case "describe": describe(admin, words.length > 1 ? words[1] : null); break;
            case "login": login(common, words[1], words[2], words[3]); break;
            default: throw new IllegalArgumentException(words[0]);
        }
    }

    static void alter(Admin admin, String user, List<String> configs) throws Exception {
        List<UserScramCredentialAlteration> alterations = new ArrayList<>();
        for (String config : configs) {
            int eq = config.indexOf('=');
            Matcher m = CREDENTIAL.matcher(config.substring(eq + 2, config.length() - 1));
            if (!m.matches()) throw new IllegalArgumentException("Invalid credential property " + config);
            int iterations = m.group(1) != null && !m.group(1).equals("-1") ? Integer.parseInt(m.group(1)) : 4096;
            ScramMechanism mechanism = ScramMechanism.fromMechanismName(config.substring(0, eq));
            alterations.add(new UserScramCredentialUpsertion(user, new ScramCredentialInfo(mechanism, iterations),
                    m.group(2).getBytes(StandardCharsets.UTF_8)));
        }
        admin.alterUserScramCredentials(alterations).all().get(60, TimeUnit.SECONDS);
        System.out.println("Completed updating config for user " + user + ".");
    }

    static void delete(Admin admin, String user, List<String> mechanisms) throws Exception {
        List<UserScramCredentialAlteration> deletions = mechanisms.stream()
                .map(m -> new UserScramCredentialDeletion(user, ScramMechanism.fromMechanismName(m)))
                .collect(Collectors.toList());
        admin.alterUserScramCredentials(deletions).all().get(60, TimeUnit.SECONDS);
        System.out.println("Completed updating config for user " + user + ".");
    }

    static void describe(Admin admin, String user) throws Exception {
        ClientQuotaFilterComponent component = user == null
                ? ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.USER)
                : ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user);
        Map<ClientQuotaEntity, Map<String, Double>> quotas = admin.describeClientQuotas(
                ClientQuotaFilter.containsOnly(Collections.singletonList(component))).entities().get(30, TimeUnit.SECONDS);
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> q : quotas.entrySet())
            System.out.println("Quota configs for " + q.getKey() + " are " + q.getValue());
        List<String> names = user == null ? Collections.emptyList() : Collections.singletonList(user);
        DescribeUserScramCredentialsResult result = admin.describeUserScramCredentials(names);
        for (String u : result.users().get(30, TimeUnit.SECONDS)) {
            try {
                UserScramCredentialsDescription d = result.description(u).get(30, TimeUnit.SECONDS);
                String text = d.credentialInfos().stream()
                        .map(i -> i.mechanism().mechanismName() + "=iterations=" + i.iterations())
                        .collect(Collectors.joining(", "));
                System.out.println("SCRAM credential configs for user-principal '" + u + "' are " + text);
            } catch (ExecutionException e) {
                System.out.println("Error retrieving SCRAM credential configs for user-principal '" + u + "': "
                        + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
            }
        }
    }

    static void login(Properties common, String mechanism, String user, String password) throws Exception {
        Properties p = new Properties();
        p.putAll(common);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", mechanism);
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        try (Admin admin = Admin.create(p)) {
            admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
            System.out.println("login ok");
        }
    }
}
