// The official openai Node SDK, LangChain JS and the Vercel AI SDK against a running tandem server:
// one line per check.
import OpenAI from "openai";
import { ChatOpenAI } from "@langchain/openai";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";

const [base, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: "sk-unused", maxRetries: 0, timeout: 120000 });
const results = [];

async function check(name, fn) {
  try {
    const detail = await fn();
    results.push(true);
    console.log(`PASS ${name}${detail ? ": " + detail : ""}`);
  } catch (e) {
    results.push(false);
    console.log(`FAIL ${name}: ${e?.constructor?.name}: ${String(e?.message ?? e).slice(0, 300)}`);
  }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }
const messages = [{ role: "user", content: "Tell me a story about a cat." }];

await check("node chat.completions whole", async () => {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
  assert(r.choices[0].message.content, "empty content");
  return JSON.stringify(r.choices[0].message.content.slice(0, 40));
});
await check("node chat.completions stream", async () => {
  let text = "", finish = null, usage = null;
  const stream = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  for await (const c of stream) {
    if (c.choices.length) { text += c.choices[0].delta.content ?? ""; finish = c.choices[0].finish_reason ?? finish; }
    if (c.usage) usage = c.usage;
  }
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
  assert(text === whole.choices[0].message.content, "streamed text differs from the whole answer");
  assert(usage && finish, "no usage or finish");
  return `${usage.completion_tokens} tokens, finish ${finish}`;
});
await check("node chat.completions.stream helper", async () => {
  const runner = client.chat.completions.stream({ model, messages, max_tokens: 16, temperature: 0 });
  const final = await runner.finalChatCompletion();
  assert(final.choices[0].message.content, "empty");
  return JSON.stringify(final.choices[0].message.content.slice(0, 40));
});
await check("node completions stream", async () => {
  let text = "";
  for await (const c of await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 16,
    temperature: 0, stream: true })) text += c.choices[0]?.text ?? "";
  assert(text.length > 0, "empty");
  return JSON.stringify(text.slice(0, 40));
});
await check("node responses whole", async () => {
  const r = await client.responses.create({ model, instructions: "You tell stories.", input: "A cat.",
    max_output_tokens: 24, temperature: 0 });
  assert(r.output_text, "empty output_text");
  return `${r.status}, ${r.usage.output_tokens} tokens`;
});
await check("node responses stream", async () => {
  let text = "", n = 0, final = null;
  for await (const e of await client.responses.create({ model, input: "A cat.", max_output_tokens: 24,
    temperature: 0, stream: true })) {
    n++;
    if (e.type === "response.output_text.delta") text += e.delta;
    if (e.type === "response.completed" || e.type === "response.incomplete") final = e.response;
  }
  const output = final?.output?.[0]?.content?.[0]?.text;
  assert(output === text, "final text differs from the deltas");
  return `${n} events`;
});
await check("node responses.stream helper", async () => {
  const stream = client.responses.stream({ model, input: "A dog.", max_output_tokens: 16, temperature: 0 });
  let deltas = "";
  stream.on("response.output_text.delta", (e) => { deltas += e.delta; });
  const final = await stream.finalResponse();
  assert(final.output_text === deltas, "final text differs from the deltas");
  return JSON.stringify(deltas.slice(0, 40));
});
await check("node models.list", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert(ids.includes(model), "model missing");
  return ids.join(", ");
});
await check("node context overflow is BadRequestError", async () => {
  try {
    await client.completions.create({ model, prompt: " a".repeat(100000), max_tokens: 4 });
  } catch (e) {
    assert(e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded", `${e.status} ${e.code}`);
    return e.code;
  }
  throw new Error("no error");
});
await check("langchain ChatOpenAI invoke", async () => {
  const llm = new ChatOpenAI({ model: "gpt-4o-mini", temperature: 0, maxTokens: 16, apiKey: "sk-unused",
    configuration: { baseURL: base }, maxRetries: 0 });
  const r = await llm.invoke("Tell me a story about a cat.");
  assert(typeof r.content === "string" && r.content.length > 0, "empty");
  return JSON.stringify(r.content.slice(0, 40));
});
await check("langchain ChatOpenAI stream", async () => {
  const llm = new ChatOpenAI({ model: "gpt-4o-mini", temperature: 0, maxTokens: 16, apiKey: "sk-unused",
    configuration: { baseURL: base }, maxRetries: 0, streamUsage: true });
  let text = "", chunks = 0;
  for await (const c of await llm.stream("Tell me a story about a cat.")) { text += c.content; chunks++; }
  assert(text.length > 0, "empty");
  return `${chunks} chunks`;
});
const provider = createOpenAI({ baseURL: base, apiKey: "sk-unused" });
await check("ai-sdk generateText (responses)", async () => {
  const r = await generateText({ model: provider(model), prompt: "A cat.", maxOutputTokens: 16, temperature: 0,
    maxRetries: 0 });
  assert(r.text.length > 0, "empty");
  return JSON.stringify(r.text.slice(0, 40));
});
await check("ai-sdk streamText (responses)", async () => {
  const r = streamText({ model: provider(model), prompt: "A cat.", maxOutputTokens: 16, temperature: 0,
    maxRetries: 0, onError: () => {} });
  let text = "";
  for await (const t of r.textStream) text += t;
  assert(text.length > 0, "empty");
  return JSON.stringify(text.slice(0, 40));
});
await check("ai-sdk streamText (chat)", async () => {
  const r = streamText({ model: provider.chat(model), prompt: "A cat.", maxOutputTokens: 16, temperature: 0,
    maxRetries: 0, onError: () => {} });
  let text = "";
  for await (const t of r.textStream) text += t;
  assert(text.length > 0, "empty");
  return JSON.stringify(text.slice(0, 40));
});

const passed = results.filter(Boolean).length;
console.log(`node: ${passed} passed, ${results.length - passed} failed`);
process.exit(passed === results.length ? 0 : 1);
