package dev.tandem.cli;

import dev.tandem.llm.model.KvType;
import java.util.Arrays;
import java.util.Iterator;
import picocli.CommandLine;

/**
 * {@code --kv-type f16|f32}, the element type of a command's KV cache, as llama.cpp spells its
 * cache types ({@code -ctk f16}): in lower case, either case accepted; anything else is a usage
 * error naming the allowed values.
 */
final class KvTypes implements CommandLine.ITypeConverter<KvType>, Iterable<String> {

    /** The option's description, for every command that has it. */
    static final String DESCRIPTION = "Element type of the KV cache: f16 (half the memory, llama.cpp's default)"
            + " or f32 (default: ${DEFAULT-VALUE}).";

    /** The option's default, as {@link #convert} reads it. */
    static final String DEFAULT = "f16";

    @Override
    public KvType convert(String value) {
        try {
            return KvType.parse(value);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }

    /** The allowed values, for the error above and picocli's completion candidates. */
    @Override
    public Iterator<String> iterator() {
        return Arrays.stream(KvType.values()).map(KvType::label).iterator();
    }
}
