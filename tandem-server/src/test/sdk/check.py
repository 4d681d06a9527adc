"""The official openai Python SDK against a running tandem server: one line per check."""
import sys
import openai
from openai import OpenAI

base, model = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base, api_key="sk-unused", max_retries=0, timeout=120)
results = []


def check(name):
    def run(fn):
        try:
            detail = fn()
            results.append(True)
            print(f"PASS python {name}" + (f": {detail}" if detail else ""))
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            results.append(False)
            print(f"FAIL python {name}: {type(e).__name__}: {e}")
    return run


MESSAGES = [{"role": "user", "content": "Tell me a story about a cat."}]


@check("chat.completions whole")
def _():
    r = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=24, temperature=0)
    assert r.choices[0].message.content, "empty content"
    assert r.usage.completion_tokens > 0
    return repr(r.choices[0].message.content[:40])


@check("chat.completions stream")
def _():
    text, finish, usage = "", None, None
    for chunk in client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=24, temperature=0,
                                                stream=True, stream_options={"include_usage": True}):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage:
            usage = chunk.usage
    whole = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=24, temperature=0)
    assert text == whole.choices[0].message.content, "streamed text differs from the whole answer"
    assert finish in ("stop", "length") and usage is not None
    return f"{usage.completion_tokens} tokens, finish {finish}"


@check("completions whole and stream")
def _():
    whole = client.completions.create(model=model, prompt="Once upon a time", max_tokens=16, temperature=0)
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=model, prompt="Once upon a time", max_tokens=16, temperature=0, stream=True) if c.choices)
    assert streamed == whole.choices[0].text
    return repr(streamed[:40])


@check("responses whole")
def _():
    r = client.responses.create(model=model, instructions="You tell stories.", input="A cat.", max_output_tokens=24,
                                temperature=0)
    assert r.output_text, "empty output_text"
    assert r.status in ("completed", "incomplete")
    return f"{r.status}, {r.usage.output_tokens} tokens"


@check("responses stream events")
def _():
    kinds, text, final = [], "", None
    for event in client.responses.create(model=model, input="A cat.", max_output_tokens=24, temperature=0,
                                         stream=True):
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type in ("response.completed", "response.incomplete"):
            final = event.response
    assert kinds[0] == "response.created" and final is not None
    assert final.output_text == text
    return f"{len(kinds)} events"


@check("responses.stream helper")
def _():
    # The embedded model never ends a story on its own (llama2.c's stories end with BOS, not EOS),
    # so the response ends at its token limit with response.incomplete, as OpenAI's does; this
    # SDK's get_final_response() accepts only response.completed, so the events are checked.
    deltas, final = "", None
    with client.responses.stream(model=model, input="A dog.", max_output_tokens=16, temperature=0) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas += event.delta
            if event.type in ("response.completed", "response.incomplete"):
                final = event.response
    assert final is not None and final.output_text == deltas
    return f"{final.status}, {repr(deltas[:40])}"


@check("models.list")
def _():
    ids = [m.id for m in client.models.list()]
    assert model in ids
    return ", ".join(ids)


@check("any model name")
def _():
    r = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=4)
    return r.model


@check("context overflow is BadRequestError context_length_exceeded")
def _():
    try:
        client.completions.create(model=model, prompt=" a" * 100000, max_tokens=4)
    except openai.BadRequestError as e:
        assert e.code == "context_length_exceeded", e.code
        return e.code
    raise AssertionError("no error")


@check("unknown parameter on responses is a BadRequestError naming it")
def _():
    try:
        client.responses.create(model=model, input="x", previous_response_id="resp_x")
    except openai.BadRequestError as e:
        assert e.param == "previous_response_id", e.param
        return e.param
    raise AssertionError("no error")


print(f"python: {sum(results)} passed, {len(results) - sum(results)} failed")
sys.exit(0 if all(results) else 1)
