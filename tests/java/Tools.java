import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.common.utils.internals.Exit;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Kafka's CLI tools (their main classes: ConsumerGroupCommand, TopicCommand, ...) run inside
 * this JVM, one at a time, so a test pays one JVM start for all the tools it runs rather than
 * one per command. System.out, System.err and System.in are switchable streams set once at
 * start-up (a tool class that keeps System.out in a static field still writes to the current
 * run), pointed at buffers while a tool runs; Exit.exit (how every Kafka tool exits) is turned
 * into an exception that ends the run with its status, as the process would have ended.
 */
final class Tools {
    private Tools() {
    }

    /** An OutputStream whose target can be swapped. */
    static final class Switch extends OutputStream {
        volatile OutputStream target;

        Switch(OutputStream target) {
            this.target = target;
        }

        @Override
        public void write(int b) throws IOException {
            target.write(b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            target.write(b, off, len);
        }

        @Override
        public void flush() throws IOException {
            target.flush();
        }
    }

    /** An InputStream whose source can be swapped. */
    static final class SwitchIn extends InputStream {
        volatile InputStream source = new ByteArrayInputStream(new byte[0]);

        @Override
        public int read() throws IOException {
            return source.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            return source.read(b, off, len);
        }

        @Override
        public int available() throws IOException {
            return source.available();
        }
    }

    /** Thrown by Exit.exit / Exit.halt while a tool runs. */
    static final class ToolExit extends RuntimeException {
        final int status;

        ToolExit(int status) {
            super("exit " + status, null, false, false);
            this.status = status;
        }
    }

    private static final OutputStream STDERR = new FileOutputStream(FileDescriptor.err);
    static final Switch OUT = new Switch(STDERR);
    static final Switch ERR = new Switch(STDERR);
    static final SwitchIn IN = new SwitchIn();
    private static final Object LOCK = new Object();
    private static volatile Integer exitStatus;

    /** Called once at start-up: from now on stray prints of any client go to stderr, never into
     *  the JSON lines on stdout. */
    static void install() {
        System.setOut(new PrintStream(OUT, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(ERR, true, StandardCharsets.UTF_8));
        System.setIn(IN);
    }

    static Object handle(String op, JsonNode c) throws Exception {
        if (!op.equals("tool.run")) {
            throw new IllegalArgumentException("unknown op " + op);
        }
        String main = Worker.text(c, "main");
        List<String> args = Worker.strings(c.get("args"));
        byte[] stdin = c.path("stdin").asText("").getBytes(StandardCharsets.UTF_8);
        long timeoutMs = c.path("timeoutMs").asLong(120_000);
        synchronized (LOCK) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            exitStatus = null;
            Throwable[] failure = new Throwable[1];
            Thread run = new Thread(() -> {
                try {
                    Class.forName(main).getMethod("main", String[].class).invoke(null, (Object) args.toArray(new String[0]));
                } catch (InvocationTargetException e) {
                    if (!(e.getCause() instanceof ToolExit)) {
                        failure[0] = e.getCause();
                    }
                } catch (Throwable t) {
                    failure[0] = t;
                }
            }, "tool");
            Exit.Procedure exit = (status, message) -> {
                // The process would end here: keep what was printed so far, drop anything a
                // catch block of the tool prints about the ToolExit on its way out.
                if (exitStatus == null) {
                    exitStatus = status;
                    System.out.flush();
                    System.err.flush();
                    OUT.target = OutputStream.nullOutputStream();
                    ERR.target = OutputStream.nullOutputStream();
                }
                throw new ToolExit(status);
            };
            Exit.setExitProcedure(exit);
            Exit.setHaltProcedure(exit);
            OUT.target = out;
            ERR.target = err;
            IN.source = new ByteArrayInputStream(stdin);
            boolean timedOut;
            try {
                run.setDaemon(true);
                run.start();
                run.join(timeoutMs);
                timedOut = run.isAlive();
                if (timedOut) {
                    run.interrupt();
                    run.join(5_000);
                }
                System.out.flush();
                System.err.flush();
            } finally {
                OUT.target = STDERR;
                ERR.target = STDERR;
                IN.source = new ByteArrayInputStream(new byte[0]);
                Exit.resetExitProcedure();
                Exit.resetHaltProcedure();
            }
            if (failure[0] != null && exitStatus == null) {
                // An uncaught exception: the JVM would print it and exit with 1.
                java.io.StringWriter trace = new java.io.StringWriter();
                failure[0].printStackTrace(new java.io.PrintWriter(trace));
                err.writeBytes(("Exception in thread \"main\" " + trace).getBytes(StandardCharsets.UTF_8));
            }
            int status = timedOut ? -1 : exitStatus != null ? exitStatus : failure[0] != null ? 1 : 0;
            return Worker.map("exit", status, "stdout", out.toString(StandardCharsets.UTF_8),
                    "stderr", err.toString(StandardCharsets.UTF_8), "timedOut", timedOut);
        }
    }
}
