package dev.tandem.llm;

import dev.tandem.llm.gguf.GgufFile;
import dev.tandem.llm.gguf.GgufTensor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

/**
 * A checkpoint's content fingerprint: what tells apart two checkpoints that carry one name (a
 * cluster never routes, nor resumes, one model's stream on a worker of another file of the same
 * name). 16 hex digits: the first 64 bits of a SHA-256.
 *
 * <p><b>A GGUF file</b>: the digest of its size, its whole header (metadata and tensor infos, up to
 * the data section: a different tokenizer, template, shape or quantisation changes it) and three
 * samples of {@value #SAMPLE} bytes of every tensor's data (its start, middle and end), because
 * two fine-tunes of one base model, converted alike, have byte-identical headers and sizes and
 * differ only in their weights, and a fine-tune changes (nearly) every tensor. <b>A Hugging Face
 * directory</b>: each regular file in name order, its name, size, first {@value #HEAD} bytes
 * (safetensors' JSON header; the tokenizer and configuration files whole) and {@value #SPREAD}
 * samples spread over it.
 *
 * <p>Cheap by design, read where the node maps the file anyway: a few pages per tensor and the
 * header, never the weights whole (a 4.7 GB 8B GGUF has about 290 tensors: some 900 small reads).
 * Not a proof of identity: weights changed only away from the sampled bytes go unseen.
 */
public final class ModelFingerprint {
    /** Bytes of each sample of a tensor or file. */
    static final int SAMPLE = 64;
    /** Bytes of a directory's file read from its start. */
    static final int HEAD = 1 << 20;
    /** Samples spread over each file of a directory. */
    static final int SPREAD = 16;

    private ModelFingerprint() {}

    /**
     * The fingerprint of the GGUF file or model directory at {@code path}.
     *
     * @throws java.io.UncheckedIOException when it cannot be read
     * @throws dev.tandem.llm.gguf.GgufException when a file is not a GGUF file
     */
    public static String of(Path path) {
        MessageDigest digest = sha256();
        try {
            if (Files.isDirectory(path)) {
                directory(path, digest);
            } else {
                gguf(path, digest);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + path + " for its fingerprint", e);
        }
        return HexFormat.of().formatHex(digest.digest(), 0, 8);
    }

    private static void gguf(Path path, MessageDigest digest) throws IOException {
        try (GgufFile file = GgufFile.open(path); FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            digest.update(longBytes(file.fileBytes()));
            read(channel, 0, file.dataStart(), digest);
            for (GgufTensor tensor : file.tensors()) {
                MemorySegment data = file.data(tensor);
                long size = data.byteSize();
                for (long at : new long[] {0, size / 2, size - SAMPLE}) {
                    long from = Math.max(0, at);
                    digest.update(data.asSlice(from, Math.min(SAMPLE, size - from)).toArray(ValueLayout.JAVA_BYTE));
                }
            }
        }
    }

    private static void directory(Path dir, MessageDigest digest) throws IOException {
        List<Path> files;
        try (Stream<Path> listing = Files.list(dir)) {
            files = listing.filter(Files::isRegularFile).sorted().toList();
        }
        for (Path f : files) {
            try (FileChannel channel = FileChannel.open(f, StandardOpenOption.READ)) {
                long size = channel.size();
                digest.update(f.getFileName().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                digest.update(longBytes(size));
                read(channel, 0, Math.min(size, HEAD), digest);
                for (int i = 1; i <= SPREAD && size > HEAD; i++) {
                    long at = HEAD + (size - HEAD - SAMPLE) * i / SPREAD;
                    read(channel, Math.max(HEAD, at), Math.min(SAMPLE, size - Math.max(HEAD, at)), digest);
                }
            }
        }
    }

    /** Feeds {@code length} bytes of {@code channel} from {@code position} to the digest. */
    private static void read(FileChannel channel, long position, long length, MessageDigest digest) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate((int) Math.min(length, 1 << 16));
        long at = position;
        long end = position + length;
        while (at < end) {
            buffer.clear().limit((int) Math.min(buffer.capacity(), end - at));
            int n = channel.read(buffer, at);
            if (n < 0) {
                throw new IOException("ended at byte " + at + " of " + end);
            }
            digest.update(buffer.flip());
            at += n;
        }
    }

    private static byte[] longBytes(long value) {
        return ByteBuffer.allocate(Long.BYTES).putLong(value).array();
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
