#!/usr/bin/env python3
"""Closed-loop or open-loop streaming clients against an OpenAI-compatible /v1/completions endpoint.

An independent client for `tandem bench serve`'s cross-check (no code shared with the bench's
own Java client): each of N threads sends a streamed completion on a fresh connection, reads its
server-sent events to [DONE], and sends the next, until the time is up. Standard library only.

  bin/serve-load.py --url http://127.0.0.1:8080 --clients 8 --seconds 10 --tokens 64 \
      [--workload unique|shared-prefix|multi-turn] [--model NAME]

With --rate R (requests per second) instead of --clients, requests arrive open-loop: at the
times of a Poisson process of rate R (seeded by --seed) for --seconds, each on a thread of its
own whatever is still running, and every one is read to its end. Closed-loop clients fall into
step with a server that runs all waiting prompts together and then all decodes, which hides its
stalls from the gaps between tokens; arrivals that do not wait for answers cannot.

Prints one JSON object: tokens_per_s (completion tokens over the wall time from the first send to
the last end), ttft_p50_ms/p99 (send to first content chunk), itl_p50_ms/p99, completions, errors.
"""
import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

WORDS = ("time little girl park dog tree ball sun happy friend went play saw big red blue day bird "
         "found house garden cat mom dad said wanted very fun jump run water boat fish flower sky "
         "green small cake toy smile walk home door window rain snow hill").split()


def text(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words))


SYSTEM = text(random.Random(500), 190)  # the shared prefix: about 500 tokens on the embedded vocabulary


class Prompts:
    """The prompts one client sends, by workload."""

    def __init__(self, workload, client, run):
        self.workload = workload
        self.run = run
        self.rng = random.Random(run * 100003 + client)
        self.client = client
        self.k = 0
        self.history = None

    def next(self):
        self.k += 1
        if self.workload == "unique":
            return f"{self.run} {self.client} {self.k} " + text(self.rng, 40)
        if self.workload == "shared-prefix":
            return SYSTEM + " User: " + text(self.rng, 16) + " Assistant:"
        # multi-turn: the conversation so far, resent with each new user turn; a new one after 6 turns
        if self.history is None or self.k % 6 == 1:
            self.history = f"{self.run} " + text(self.rng, 60)
        self.history += " User: " + text(self.rng, 12) + " Assistant:"
        return self.history

    def reply(self, text_out):
        if self.workload == "multi-turn" and self.history is not None:
            self.history += text_out


def complete(url, model, prompt, tokens):
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": tokens, "temperature": 0,
                       "stream": True, "ignore_eos": True, "stream_options": {"include_usage": True}})
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    sent = time.perf_counter()
    conn.request("POST", "/v1/completions", body=body,
                 headers={"Content-Type": "application/json", "Connection": "close"})
    response = conn.getresponse()
    if response.status != 200:
        raise IOError(f"HTTP {response.status}: {response.read()[:200]!r}")
    first = previous = None
    gaps = []
    chunks = 0
    usage = None
    done = False
    out = []
    while True:
        line = response.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            done = True
            break
        now = time.perf_counter()
        event = json.loads(data)
        if "error" in event:
            raise IOError(f"error event: {data[:200]!r}")
        if event.get("usage") and event["usage"].get("completion_tokens") is not None:
            usage = event["usage"]["completion_tokens"]
        choices = event.get("choices") or []
        if not choices:
            continue
        piece = choices[0].get("text") or ""
        if choices[0].get("finish_reason") is not None and not piece:
            continue
        out.append(piece)
        chunks += 1
        if first is None:
            first = now
        else:
            gaps.append((now - previous) * 1000)
        previous = now
    conn.close()
    if not done or first is None:
        raise IOError("the stream ended without [DONE] or without a token")
    return (usage if usage is not None else chunks), (first - sent) * 1000, gaps, "".join(out)


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    index = max(0, min(len(values) - 1, int(-(-p * len(values) // 100)) - 1))
    return values[index]


def report(args, results, errors, first_error, seconds, **extra):
    ttft = [r[1] for rs in results for r in rs]
    itl = [g for rs in results for r in rs for g in r[2]]
    tokens = sum(r[0] for rs in results for r in rs)
    out = {"client": "bin/serve-load.py", "workload": args.workload}
    out.update(extra)
    out.update({"completions": len(ttft), "tokens": tokens, "seconds": seconds,
                "tokens_per_s": tokens / seconds if seconds > 0 else float("nan"),
                "ttft_p50_ms": percentile(ttft, 50), "ttft_p99_ms": percentile(ttft, 99),
                "itl_p50_ms": percentile(itl, 50), "itl_p99_ms": percentile(itl, 99),
                "errors": sum(errors), "first_error": first_error[0] if first_error else None})
    print(json.dumps(out))


def open_loop(args):
    """Poisson arrivals at args.rate for args.seconds; every request read to its end."""
    url = urllib.parse.urlparse(args.url)
    arrivals = random.Random(args.seed)
    run = random.SystemRandom().randrange(1 << 30)
    results = []
    errors = []
    first_error = []
    ends = []
    lock = threading.Lock()

    def request(i, at):
        delay = at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        try:
            tokens, ttft, gaps, _ = complete(url, args.model, Prompts(args.workload, i, run).next(), args.tokens)
            with lock:
                results.append([(tokens, ttft, gaps)])
        except Exception as e:  # counted and reported, as the closed loop does
            with lock:
                errors.append(1)
                if not first_error:
                    first_error.append(repr(e))
        with lock:
            ends.append(time.perf_counter())

    start = time.perf_counter()
    threads = []
    at = start
    while True:
        at += arrivals.expovariate(args.rate)
        if at - start >= args.seconds:
            break
        t = threading.Thread(target=request, args=(len(threads), at))
        threads.append(t)
        t.start()
    for t in threads:
        t.join()
    seconds = (max(ends) if ends else time.perf_counter()) - start
    report(args, results, errors, first_error, seconds, rate=args.rate, requests=len(threads))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--workload", default="unique", choices=["unique", "shared-prefix", "multi-turn"])
    parser.add_argument("--model", default="model")
    parser.add_argument("--rate", type=float, default=0,
                        help="open loop: requests per second, Poisson arrivals (instead of --clients)")
    parser.add_argument("--seed", type=int, default=1, help="open loop: the arrivals' seed")
    args = parser.parse_args()
    if args.rate < 0 or args.seconds <= 0 or args.clients < 1 or args.tokens < 1:
        parser.error("--rate must be >= 0, --seconds > 0, --clients and --tokens >= 1")
    if args.rate > 0:
        return open_loop(args)
    url = urllib.parse.urlparse(args.url)
    results = [[] for _ in range(args.clients)]
    errors = [0] * args.clients
    last_end = [0.0] * args.clients
    first_error = []
    run = random.SystemRandom().randrange(1 << 30)  # this run's prompts are its own: no cache holds them
    start = time.perf_counter()
    until = start + args.seconds

    def client(c):
        prompts = Prompts(args.workload, c, run)
        while True:
            try:
                tokens, ttft, gaps, text_out = complete(url, args.model, prompts.next(), args.tokens)
                results[c].append((tokens, ttft, gaps))
                prompts.reply(text_out)
            except Exception as e:  # counted and reported, as the bench's own client does
                errors[c] += 1
                if not first_error:
                    first_error.append(repr(e))
                if errors[c] > 3:
                    break
            last_end[c] = time.perf_counter()
            if time.perf_counter() >= until:
                break

    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = max(last_end) - start
    report(args, results, errors, first_error, seconds, clients=args.clients)


if __name__ == "__main__":
    sys.exit(main())
