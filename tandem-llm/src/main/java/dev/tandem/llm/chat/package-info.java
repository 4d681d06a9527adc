/**
 * Chat templates: a conversation ({@link dev.tandem.llm.chat.ChatMessage}s) turned into the prompt
 * text a model was trained on, by {@link dev.tandem.llm.chat.ChatTemplate}.
 *
 * <p>A model's {@code tokenizer.chat_template} is Python Jinja2 written for Hugging Face's
 * {@code apply_chat_template}; it is rendered with Jinjava to the same text, character for
 * character (checked against Jinja2 on the five real templates in {@code shared/models/templates}):
 *
 * <ul>
 *   <li>whitespace control, {@code trim_blocks} and {@code lstrip_blocks} follow Jinja2's lexer
 *       ({@code Jinja2Source} applies them to the text before Jinjava sees it);
 *   <li>Python-isms Jinjava lacks are added, not forked: {@code str} methods ({@code strip},
 *       {@code split}, {@code startswith}, ...), {@code tojson} as {@code json.dumps},
 *       {@code items}, {@code raise_exception}, {@code strftime_now}, {@code xs[::-1]}, and Python's
 *       precedence of {@code not} and of keyword arguments;
 *   <li>"today" ({@code strftime_now}, {@code date_string}) comes from an injectable
 *       {@link java.time.Clock}.
 * </ul>
 *
 * <p>Known differences from Jinja2, which no chat template we know relies on: a boolean or none
 * printed directly renders as {@code true}/{@code false}/nothing rather than
 * {@code True}/{@code False}/{@code None}; {@code ~} binds like {@code +}; unary minus on a literal
 * ({@code - 1}) is dropped by Jinjava; tools ({@code tools}, {@code tool_calls}) are not passed.
 *
 * <p>A model without a template gets {@link dev.tandem.llm.chat.ChatTemplate#plain()} (chat
 * models: {@code role: content} lines, then {@code assistant:}) or
 * {@link dev.tandem.llm.chat.ChatTemplate#completion()} (base models: the text as it is).
 */
package dev.tandem.llm.chat;
