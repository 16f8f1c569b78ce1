// loom-rules from-tuned: Open MPI 4.1 coll/tuned dynamic rules files as loom rule files.
#include "loom_rules.hpp"
#include "registry.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace loom::rules_tool {

using loom::rules::Range;
using loom::rules::Rule;

namespace {

// ---- from-tuned ----------------------------------------------------------------------------
// Open MPI 4.1's coll/tuned dynamic rules file (coll_tuned_dynamic_file.c): numbers separated
// by white space, '#' to the end of the line a comment. COUNT; per collective: ID, NCS; per
// comm size: size, NMS; per message size: size, algorithm, topo fan-in/out, segment size. A
// rule applies from its comm size (message size) up to the next; the first also below it (the
// first message size must be 0). Algorithm 0 means tuned's fixed decision.

struct TunedAlgorithm {
    std::string_view tuned, loom, note; // loom empty: not mapped, and the note says why
};
struct TunedCollective {
    std::string_view name;
    std::optional<Collective> loom;
    std::vector<TunedAlgorithm> algorithms; // numbered from 1, as in tuned's *_intra_do_this
};

// By collective ID (COLLTYPE in ompi/mca/coll/base/coll_base_functions.h); algorithm numbers
// from coll_tuned_*_decision.c.
const std::vector<TunedCollective>& tuned_collectives()
{
    static const TunedAlgorithm two_proc{"two_proc", "",
                                         "a 2-rank special case; loom's algorithms serve 2 ranks themselves"};
    static const std::string_view butterfly =
        "tuned's butterfly also serves non-commutative ops, loom's halving_doubling passes them on";
    static const std::vector<TunedCollective> table = {
        {"allgather",
         Collective::allgather,
         {{"linear", "", "gather then bcast; loom has no linear allgather"},
          {"bruck", "bruck", ""},
          {"recursive_doubling", "recursive_doubling", ""},
          {"ring", "ring", ""},
          {"neighbor", "", "neighbor exchange; loom has no neighbor-exchange allgather"},
          two_proc}},
        {"allgatherv",
         Collective::allgatherv,
         {{"default", "", "gatherv then bcast; loom has no linear allgatherv"},
          {"bruck", "bruck", ""},
          {"ring", "ring", ""},
          {"neighbor", "", "neighbor exchange; loom has no neighbor-exchange allgatherv"},
          two_proc}},
        {"allreduce",
         Collective::allreduce,
         {{"basic_linear", "", "linear reduce then linear bcast; loom has no linear allreduce"},
          {"nonoverlapping", "", "the communicator's own reduce then bcast; loom has no such composition"},
          {"recursive_doubling", "recursive_doubling", ""},
          {"ring", "ring", ""},
          {"segmented_ring", "ring_pipelined", ""},
          {"rabenseifner", "halving_doubling", ""}}},
        {"alltoall",
         Collective::alltoall,
         {{"linear", "", "every send and receive posted at once; loom has no linear alltoall"},
          {"pairwise", "pairwise", ""},
          {"modified_bruck", "bruck", ""},
          {"linear_sync", "", "linear with bounded requests; loom has no linear alltoall"},
          two_proc}},
        {"alltoallv", {}, {}},
        {"alltoallw", {}, {}},
        {"barrier",
         Collective::barrier,
         {{"linear", "", "all to rank 0 and back; loom has no linear barrier"},
          {"double_ring", "", "two passes round a ring; loom has no ring barrier"},
          {"recursive_doubling", "recursive_doubling", ""},
          {"bruck", "bruck", ""},
          two_proc,
          {"tree", "", "fan-in then fan-out tree; loom has no tree barrier"}}},
        {"bcast",
         Collective::bcast,
         {{"basic_linear", "", "the root sends to every rank; loom has no linear bcast"},
          {"chain", "", "fan-out chains; loom has no chain bcast"},
          {"pipeline", "", "a segmented chain; loom has no chain bcast"},
          {"split_binary_tree", "", "loom has no binary-tree bcast"},
          {"binary_tree", "", "loom has no binary-tree bcast"},
          {"binomial", "binomial", ""},
          {"knomial", "", "a k-nomial tree (coll_tuned_bcast_knomial_radix, 4 by default); loom's tree is binomial"},
          {"scatter_allgather", "scatter_allgather", "tuned's allgather phase is recursive doubling, loom's a ring"},
          {"scatter_allgather_ring", "scatter_allgather", ""}}},
        {"exscan", {}, {}},
        {"gather", {}, {}},
        {"gatherv", {}, {}},
        {"reduce",
         Collective::reduce,
         {{"linear", "", "the root receives from every rank; loom has no linear reduce"},
          {"chain", "", "fan-in chains; loom has no chain reduce"},
          {"pipeline", "", "a segmented chain; loom has no chain reduce"},
          {"binary", "", "loom has no binary-tree reduce"},
          {"binomial", "binomial", ""},
          {"in-order_binary", "", "loom has no binary-tree reduce"},
          {"rabenseifner", "halving_doubling", ""}}},
        {"reduce_scatter",
         Collective::reduce_scatter,
         {{"non-overlapping", "", "reduce then scatterv; loom has no such composition"},
          {"recursive_halving", "halving_doubling", ""},
          {"ring", "ring", ""},
          {"butterfly", "halving_doubling", butterfly}}},
        {"reduce_scatter_block",
         Collective::reduce_scatter_block,
         {{"basic_linear", "", "reduce then scatter; loom has no such composition"},
          {"recursive_doubling", "",
           "full-vector exchanges (S lg P sent); loom has no recursive-doubling reduce-scatter"},
          {"recursive_halving", "halving_doubling", ""},
          {"butterfly", "halving_doubling", butterfly}}},
        {"scan", {}, {}},
        {"scatter", {}, {}},
        {"scatterv", {}, {}},
        {"neighbor_allgather", {}, {}},
        {"neighbor_allgatherv", {}, {}},
        {"neighbor_alltoall", {}, {}},
        {"neighbor_alltoallv", {}, {}},
        {"neighbor_alltoallw", {}, {}},
    };
    return table;
}

struct TunedError : std::runtime_error {
    TunedError(int line, const std::string& what) : std::runtime_error(what), line(line) {}
    int line;
};

struct TunedMsg {
    std::uint64_t bytes;
    long alg, faninout, segsize;
    int line;
};
struct TunedComm {
    std::uint64_t size;
    int line;
    std::vector<TunedMsg> msgs;
};
struct TunedColl {
    long id;
    int line;
    std::vector<TunedComm> comms;
};

// The file's numbers, read as Open MPI reads them (strtol base 0: 0x hex, a leading 0 octal).
class TunedReader {
public:
    explicit TunedReader(const std::string& text)
    {
        std::istringstream lines(text);
        std::string line;
        for (int n = 1; std::getline(lines, line); ++n) {
            std::istringstream words(line.substr(0, line.find('#')));
            for (std::string w; words >> w;) tokens_.push_back({w, n});
            last_line_ = n;
        }
    }
    long next(const std::string& what)
    {
        if (pos_ == tokens_.size()) throw TunedError(last_line_, "expected " + what + ", found the end of the file");
        const auto& [word, line] = tokens_[pos_++];
        line_ = line;
        errno = 0;
        char* end = nullptr;
        const long v = std::strtol(word.c_str(), &end, 0);
        if (end == word.c_str() || *end != '\0')
            throw TunedError(
                line, "expected " + what + ", found '" + word + "'" +
                          (word.size() > 1 && word[0] == '0' ? " (a leading 0 is octal, as Open MPI reads it)" : ""));
        if (errno == ERANGE) throw TunedError(line, "the number '" + word + "' is too large");
        if (v < 0) throw TunedError(line, "expected " + what + ", found the negative " + word);
        return v;
    }
    int line() const { return line_; }
    std::size_t left() const { return tokens_.size() - pos_; }
    int next_line() const { return pos_ < tokens_.size() ? tokens_[pos_].second : last_line_; }

private:
    std::vector<std::pair<std::string, int>> tokens_;
    std::size_t pos_ = 0;
    int line_ = 0, last_line_ = 0;
};

std::vector<TunedColl> read_tuned(TunedReader& in)
{
    const auto& known = tuned_collectives();
    const std::string ids = "0-" + std::to_string(known.size() - 1);
    const long count = in.next("the number of collectives");
    if (count > long(known.size()))
        throw TunedError(in.line(), "the file declares " + std::to_string(count) + " collectives; Open MPI 4.1 has " +
                                        std::to_string(known.size()));
    std::vector<TunedColl> out;
    for (long x = 0; x < count; ++x) {
        TunedColl c{in.next("a collective ID (" + ids + ")"), in.line(), {}};
        if (c.id >= long(known.size()))
            throw TunedError(c.line, "collective ID " + std::to_string(c.id) + " is out of range (Open MPI 4.1's are " +
                                         ids + ")");
        for (const TunedColl& o : out)
            if (o.id == c.id)
                throw TunedError(c.line, "collective " + std::to_string(c.id) + " appears again (first at line " +
                                             std::to_string(o.line) + "); Open MPI would keep only the last");
        const std::string name(known[std::size_t(c.id)].name);
        for (long i = 0, ncs = in.next("the number of comm sizes for " + name); i < ncs; ++i) {
            TunedComm cs{std::uint64_t(in.next("a comm size for " + name)), in.line(), {}};
            if (!c.comms.empty() && cs.size <= c.comms.back().size)
                throw TunedError(cs.line, name + " comm size " + std::to_string(cs.size) +
                                              " is not above the previous one (" + std::to_string(c.comms.back().size) +
                                              "); tuned expects increasing sizes");
            const std::string where = name + " comm size " + std::to_string(cs.size);
            for (long j = 0, nms = in.next("the number of message sizes for " + where); j < nms; ++j) {
                TunedMsg m{std::uint64_t(in.next("a message size for " + where)), 0, 0, 0, in.line()};
                m.alg = in.next("an algorithm number for " + where);
                m.faninout = in.next("a topo fan-in/out for " + where);
                m.segsize = in.next("a segment size for " + where);
                if (j == 0 && m.bytes != 0)
                    throw TunedError(m.line, "the first message size of " + where +
                                                 " must be 0 (tuned requires it), found " + std::to_string(m.bytes));
                if (j > 0 && m.bytes <= cs.msgs.back().bytes)
                    throw TunedError(m.line, where + ": message size " + std::to_string(m.bytes) +
                                                 " is not above the previous one; tuned expects increasing sizes");
                cs.msgs.push_back(m);
            }
            c.comms.push_back(std::move(cs));
        }
        out.push_back(std::move(c));
    }
    return out;
}

// loom's message size for a tuned threshold, exact at the tuned rule's comm size.
std::uint64_t loom_bytes(Collective c, std::uint64_t tuned, std::uint64_t comm_size)
{
    const std::uint64_t p = std::max<std::uint64_t>(comm_size, 1);
    if (c == Collective::alltoall) return tuned / p + (tuned % p != 0);                      // tuned: P blocks
    if (c == Collective::allgatherv) return tuned > UINT64_MAX / p ? UINT64_MAX : tuned * p; // tuned: per rank
    return tuned;
}

struct Converted {
    std::vector<Row> rows;
    int rules = 0, not_mapped = 0;
};

// One tuned message-size rule: a loom rule, or a "# not mapped" line saying why.
void convert_rule(const TunedCollective& t, const TunedComm& cs, std::size_t j, const Range& ranks, Converted& out)
{
    const TunedMsg& m = cs.msgs[j];
    const bool last = j + 1 == cs.msgs.size();
    const std::uint64_t lo = loom_bytes(*t.loom, m.bytes, cs.size),
                        next = last ? 0 : loom_bytes(*t.loom, cs.msgs[j + 1].bytes, cs.size);
    const TunedAlgorithm* a =
        m.alg >= 1 && std::size_t(m.alg) <= t.algorithms.size() ? &t.algorithms[std::size_t(m.alg - 1)] : nullptr;
    std::string why;
    if (m.alg == 0)
        why = "algorithm 0 asks for tuned's fixed decision; loom's defaults decide instead";
    else if (!a)
        why = "tuned 4.1 has no " + std::string(t.name) + " algorithm " + std::to_string(m.alg);
    else if (a->loom.empty())
        why = "algorithm " + std::to_string(m.alg) + " " + std::string(a->tuned) + ": " + std::string(a->note);
    else if (!last && next <= lo)
        why = "it covers no loom message size at comm size " + std::to_string(cs.size);
    if (!why.empty()) {
        out.rows.push_back({{},
                            "# not mapped: " + std::string(t.name) + " comm size " + std::to_string(cs.size) +
                                ", message size " + std::to_string(m.bytes) + " (line " + std::to_string(m.line) +
                                "): " + why});
        ++out.not_mapped;
        return;
    }
    Rule r;
    r.collective = *t.loom;
    r.ranks = ranks;
    r.bytes = {lo, last ? UINT64_MAX : next - 1};
    r.algorithm = std::string(a->loom);
    std::vector<std::string> notes;
    if (!a->note.empty()) notes.emplace_back(a->note);
    if (a->tuned == "segmented_ring" && m.segsize == 0) {
        r.algorithm = "ring";
        notes.emplace_back("segment size 0: tuned runs the plain ring");
    } else if (a->tuned == "segmented_ring" || (r.collective == Collective::bcast && r.algorithm == "binomial")) {
        if (m.segsize > 0)
            r.segment_bytes = std::uint64_t(m.segsize); // loom's segmented algorithms
        else
            notes.emplace_back("unsegmented in tuned; loom's coll_loom_segment_size applies");
    } else if (m.segsize > 0) {
        notes.push_back("segment size " + std::to_string(m.segsize) + " dropped: loom's " + r.algorithm +
                        " is not segmented");
    }
    notes.insert(notes.begin(),
                 "line " + std::to_string(m.line) + ": tuned " + std::to_string(m.alg) + " " + std::string(a->tuned));
    out.rows.push_back({rule_fields(r), join(notes, "; ")});
    ++out.rules;
}

void convert_collective(const TunedColl& tc, Converted& out)
{
    const TunedCollective& t = tuned_collectives()[std::size_t(tc.id)];
    const std::string id =
        std::string(t.name) + " (tuned collective " + std::to_string(tc.id) + ", line " + std::to_string(tc.line) + ")";
    if (!t.loom) {
        int n = 0;
        for (const TunedComm& cs : tc.comms) n += int(cs.msgs.size());
        out.rows.push_back({{},
                            "# not mapped: " + id + ": loom does not serve " + std::string(t.name) + " (" +
                                std::to_string(n) + (n == 1 ? " rule)" : " rules)")});
        out.not_mapped += n;
        return;
    }
    out.rows.push_back({{}, "# " + id});
    if (t.loom == Collective::alltoall)
        out.rows.push_back(
            {{}, "# tuned's alltoall message size is the whole send buffer (P blocks), loom's one block: bytes"});
    if (t.loom == Collective::allgatherv)
        out.rows.push_back(
            {{}, "# tuned's allgatherv message size is the average per rank, loom's the whole gathered vector: bytes"});
    if (t.loom == Collective::alltoall || t.loom == Collective::allgatherv)
        out.rows.push_back({{},
                            std::string("# are tuned's ") + (t.loom == Collective::alltoall ? "divided by" : "times") +
                                " the rule's comm size, exact at that comm size (approximate for the larger ones)."});
    for (std::size_t i = 0; i < tc.comms.size(); ++i) {
        const TunedComm& cs = tc.comms[i];
        const bool last = i + 1 == tc.comms.size();
        const std::uint64_t hi = last ? UINT64_MAX : tc.comms[i + 1].size - 1;
        const Range ranks{i == 0 ? std::min<std::uint64_t>(last ? 0 : 1, hi) : cs.size, hi};
        if (cs.msgs.empty())
            out.rows.push_back({{},
                                "# " + std::string(t.name) + " comm size " + std::to_string(cs.size) + " (line " +
                                    std::to_string(cs.line) + ") has no message sizes: tuned uses its fixed decision"});
        for (std::size_t j = 0; j < cs.msgs.size(); ++j) convert_rule(t, cs, j, ranks, out);
    }
}

} // namespace

int cmd_from_tuned(const std::vector<std::string>& in)
{
    const Args a = parse_args(in, {}, {});
    if (a.positional.size() != 1) throw UsageError("from-tuned expects one FILE");
    const std::string& file = a.positional[0];
    std::ifstream f(file, std::ios::binary);
    const std::string text = f ? std::string(std::istreambuf_iterator<char>(f), {}) : "";
    if (!f || f.bad() || text.size() > (std::size_t(64) << 20)) {
        std::fprintf(stderr, "%s: error: cannot read the tuned rules file (or it is larger than 64 MiB)\n",
                     file.c_str());
        return 1;
    }
    TunedReader reader(text);
    std::vector<TunedColl> colls;
    try {
        colls = read_tuned(reader);
    } catch (const TunedError& e) {
        const std::string where = e.line > 0 ? file + ":" + std::to_string(e.line) : file; // line 0: an empty file
        std::fprintf(stderr, "%s: error: %s\n", where.c_str(), e.what());
        return 1;
    }
    if (reader.left() != 0)
        std::fprintf(
            stderr,
            "%s:%d: warning: %zu numbers after the last declared collective are ignored (as Open MPI ignores them)\n",
            file.c_str(), reader.next_line(), reader.left());
    Converted out;
    out.rows = {
        {{}, "loom-rules 1"},
        written_by("from-tuned"),
        {{}, "# Converted by loom-rules from-tuned from the Open MPI tuned dynamic rules file " + file + "."},
        {{}, "# tuned applies a rule from its comm size (message size) up to the next one, the first also below"},
        {{}, "# it; here ranges are loom's, inclusive. Calls no rule covers get loom's defaults."},
        {{"# collective", "ranks", "bytes", "algorithm"}, "tuned source"}};
    for (const TunedColl& c : colls) convert_collective(c, out);
    std::fputs(render(out.rows).c_str(), stdout);
    std::fprintf(stderr, "%d rules converted, %d not mapped\n", out.rules, out.not_mapped);
    return 0;
}

} // namespace loom::rules_tool
