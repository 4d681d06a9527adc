// The oneTBB baseline for per-task overhead in `tandem bench overhead`.
//
// Reads a DAG in explicit form (written by TbbPeer.java), builds it as a tbb::flow::graph of
// continue_node<continue_msg> joined by make_edge, runs it to wait_for_all(), and prints the
// best nanoseconds per task over the timed repetitions as a single line:
//
//     ns_per_task=<value>
//
// Usage: tbb_peer <dag-file> <threads> <repetitions>
//
// DAG file: little-endian int32 values: magic 0x54444147 ("TDAG"), task count n, edge count,
// then for each task in order its predecessor count followed by its predecessor indices, all
// smaller than the task's own index.
//
// One warm-up run records a start and a finish sequence number per node and checks that every
// node started after all its predecessors finished; the timed runs' bodies write one slot of a
// vector, checked after each run. A timed run covers building the graph (nodes and edges),
// starting its sources, and wait_for_all(); tearing the graph down is not timed.
//
// Exit codes: 0 success, 2 bad arguments or DAG file, 3 a run violated the DAG.

#if __has_include(<oneapi/tbb/flow_graph.h>)
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#elif __has_include(<tbb/flow_graph.h>)
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#else
#error "oneTBB headers not found"
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <string>
#include <vector>

namespace {

constexpr std::uint32_t kMagic = 0x54444147u;

struct Dag {
    std::int32_t tasks = 0;
    std::vector<std::int32_t> predecessor_start;  // predecessors of t: [start[t], start[t + 1])
    std::vector<std::int32_t> predecessors;
    std::vector<std::int32_t> sources;            // tasks without predecessors
};

[[noreturn]] void fail(int code, const std::string& message) {
    std::fprintf(stderr, "tbb_peer: %s\n", message.c_str());
    std::exit(code);
}

class Reader {
public:
    explicit Reader(const char* path) : file_(std::fopen(path, "rb")), path_(path) {
        if (file_ == nullptr) {
            fail(2, "cannot open DAG file " + path_);
        }
    }
    ~Reader() { std::fclose(file_); }
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    std::int32_t next() {
        unsigned char bytes[4];
        if (std::fread(bytes, 1, sizeof bytes, file_) != sizeof bytes) {
            fail(2, "DAG file " + path_ + " ends early");
        }
        std::uint32_t value = std::uint32_t(bytes[0]) | (std::uint32_t(bytes[1]) << 8)
                | (std::uint32_t(bytes[2]) << 16) | (std::uint32_t(bytes[3]) << 24);
        return static_cast<std::int32_t>(value);
    }

private:
    std::FILE* file_;
    std::string path_;
};

Dag read_dag(const char* path) {
    Reader in(path);
    if (static_cast<std::uint32_t>(in.next()) != kMagic) {
        fail(2, std::string("DAG file ") + path + " does not start with the TDAG magic");
    }
    Dag dag;
    dag.tasks = in.next();
    std::int32_t edges = in.next();
    if (dag.tasks < 1 || edges < 0) {
        fail(2, "DAG file header has " + std::to_string(dag.tasks) + " tasks and " + std::to_string(edges) + " edges");
    }
    dag.predecessor_start.reserve(std::size_t(dag.tasks) + 1);
    dag.predecessors.reserve(std::size_t(edges));
    dag.predecessor_start.push_back(0);
    for (std::int32_t task = 0; task < dag.tasks; ++task) {
        std::int32_t count = in.next();
        if (count < 0 || std::int64_t(dag.predecessors.size()) + count > edges) {
            fail(2, "task " + std::to_string(task) + " has an invalid predecessor count " + std::to_string(count));
        }
        for (std::int32_t k = 0; k < count; ++k) {
            std::int32_t predecessor = in.next();
            if (predecessor < 0 || predecessor >= task) {
                fail(2, "task " + std::to_string(task) + " has predecessor " + std::to_string(predecessor)
                        + ", which is not an earlier task");
            }
            dag.predecessors.push_back(predecessor);
        }
        if (count == 0) {
            dag.sources.push_back(task);
        }
        dag.predecessor_start.push_back(static_cast<std::int32_t>(dag.predecessors.size()));
    }
    if (std::int64_t(dag.predecessors.size()) != edges) {
        fail(2, "DAG file declares " + std::to_string(edges) + " edges but lists " + std::to_string(dag.predecessors.size()));
    }
    return dag;
}

using Node = tbb::flow::continue_node<tbb::flow::continue_msg>;

// Builds the graph, starts its sources and waits for all nodes; returns the elapsed nanoseconds.
// make_body(task) gives the node body of one task.
template <typename MakeBody>
std::int64_t run_once(const Dag& dag, MakeBody make_body) {
    auto start = std::chrono::steady_clock::now();
    tbb::flow::graph graph;
    std::deque<Node> nodes;  // deque: nodes are never moved once built
    for (std::int32_t task = 0; task < dag.tasks; ++task) {
        nodes.emplace_back(graph, make_body(task));
        for (std::int32_t k = dag.predecessor_start[task]; k < dag.predecessor_start[task + 1]; ++k) {
            tbb::flow::make_edge(nodes[std::size_t(dag.predecessors[k])], nodes.back());
        }
    }
    for (std::int32_t source : dag.sources) {
        nodes[std::size_t(source)].try_put(tbb::flow::continue_msg());
    }
    graph.wait_for_all();
    auto elapsed = std::chrono::steady_clock::now() - start;
    // nodes, then graph, are destroyed on return, outside the timed span
    return std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
}

void check_order(const Dag& dag) {
    std::vector<std::int64_t> started(std::size_t(dag.tasks), -1);
    std::vector<std::int64_t> finished(std::size_t(dag.tasks), -1);
    std::atomic<std::int64_t> sequence{0};
    run_once(dag, [&](std::int32_t task) {
        return [&started, &finished, &sequence, task](const tbb::flow::continue_msg&) {
            started[std::size_t(task)] = sequence.fetch_add(1);
            finished[std::size_t(task)] = sequence.fetch_add(1);
        };
    });
    for (std::int32_t task = 0; task < dag.tasks; ++task) {
        if (started[std::size_t(task)] < 0) {
            fail(3, "task " + std::to_string(task) + " never ran");
        }
        for (std::int32_t k = dag.predecessor_start[task]; k < dag.predecessor_start[task + 1]; ++k) {
            std::int32_t predecessor = dag.predecessors[k];
            if (finished[std::size_t(predecessor)] > started[std::size_t(task)]) {
                fail(3, "task " + std::to_string(task) + " started before its predecessor "
                        + std::to_string(predecessor) + " finished");
            }
        }
    }
}

int parse_positive(const char* text, const char* what) {
    char* end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < 1 || value > std::numeric_limits<int>::max()) {
        fail(2, std::string(what) + " must be a positive integer, got '" + text + "'");
    }
    return static_cast<int>(value);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        fail(2, "usage: tbb_peer <dag-file> <threads> <repetitions>");
    }
    Dag dag = read_dag(argv[1]);
    int threads = parse_positive(argv[2], "threads");
    int repetitions = parse_positive(argv[3], "repetitions");

    // The main thread counts toward the limit: it runs nodes while it waits in wait_for_all().
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(threads));

    check_order(dag);  // doubles as the warm-up run

    std::vector<int> slots(std::size_t(dag.tasks), 0);
    std::int64_t best = std::numeric_limits<std::int64_t>::max();
    for (int run = 1; run <= repetitions; ++run) {
        std::int64_t elapsed = run_once(dag, [&slots, run](std::int32_t task) {
            return [&slots, run, task](const tbb::flow::continue_msg&) { slots[std::size_t(task)] = run; };
        });
        for (std::int32_t task = 0; task < dag.tasks; ++task) {
            if (slots[std::size_t(task)] != run) {
                fail(3, "run " + std::to_string(run) + " finished without running task " + std::to_string(task));
            }
        }
        if (elapsed < best) {
            best = elapsed;
        }
    }
    std::printf("ns_per_task=%.3f\n", double(best) / double(dag.tasks));
    return 0;
}
