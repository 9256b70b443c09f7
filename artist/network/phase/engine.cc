// The phase contention engine (engine.py's run_component) compiled: the same algorithm, the same
// floating-point operations in the same order, so the same answers bit for bit (tests compare the
// two on every scenario they run). engine.py is the reference and the documentation; this file follows
// it function by function. Built once per installation by native.py (artist/network/ns3/engine_build.py's
// cache), loaded with ctypes; no ns-3 headers or libraries.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr double TIE = 1e-12;          // flow/maxmin.py's _TIE
constexpr std::size_t SMALL = 24;      // engine.py's SMALL: below it, max_min_rates_small's order of operations
constexpr std::size_t MAX_RATE_MEMO = 50000;  // engine.py's MAX_RATE_MEMO
constexpr int SHOWN_ITERATIONS = 64;  // engine.py's SHOWN_ITERATIONS
const double INF = std::numeric_limits<double>::infinity();

constexpr double BUFFER_BYTES = 1048576.0;  // engine.py's BUFFER_BYTES
enum Bound { EMPTY = 0, BETWEEN = 1, FULL = 2, UP_DONE = 3 };  // engine.py's bounds
enum Kind { DRAINS = 0, UP_DRAINS = 1, EMPTIES = 2, FILLS = 3 };  // engine.py's bundle events
enum Stage { BOTH = 0, UP = 1, DOWN = 2 };  // engine.py's flow stages (a flow's class is its bundle's + this)

struct Timer {
  double when;
  int64_t seq;
  int job;
  int node;
};

// heapq's order on (when, seq, ...): seq is unique, so a total order
struct Later {
  bool operator()(const Timer& a, const Timer& b) const {
    return a.when > b.when || (a.when == b.when && a.seq > b.seq);
  }
};

// engine.py's _Bundle, in a slot of Run::bundles_ (slots reused; its ident is engine.py's id)
struct Bundle {
  int64_t ident;
  int job;
  int node;
  double work;
  int cls;
  bool two;
  double x_up, x_down, rate_up, rate_down, since;
  int64_t version;
  int kind;
  int bound_seen;
  bool live;

  void advance(double now) {
    double dt = now - since;
    if (dt > 0) {
      double eps = 1e-9 * work;
      x_up = std::min(work, x_up + rate_up * dt);
      x_down = std::min(x_up, x_down + rate_down * dt);
      if (work - x_up <= eps) x_up = work;
      double gap = x_up - x_down;
      if (gap <= eps) {
        x_down = x_up;
      } else if (gap >= BUFFER_BYTES - eps) {
        x_down = x_up - BUFFER_BYTES;
      }
    }
    since = now;
  }

  void reach() {
    if (kind == DRAINS) {
      x_up = work;
      x_down = work;
    } else if (kind == UP_DRAINS) {
      x_up = work;
    } else if (kind == EMPTIES) {
      x_down = x_up;
    } else {
      x_down = x_up - BUFFER_BYTES;
    }
  }

  bool drained() const { return work - x_down <= 1e-9 * work; }

  int bound() const {
    if (!two) return x_up < work ? BETWEEN : UP_DONE;
    if (x_up >= work) return UP_DONE;
    double gap = x_up - x_down;
    return gap <= 0 ? EMPTY : gap >= BUFFER_BYTES ? FULL : BETWEEN;
  }

  // seconds from `since` to its next event, and which (engine.py's next_event: the first, ties to the earlier)
  double next_event(int* what) const {
    double up = rate_up, down = rate_down;
    double t = down > 0 ? (work - x_down) / down : INF;
    *what = DRAINS;
    if (two && x_up < work) {
      double gap = x_up - x_down;
      double when[3] = {up > 0 ? (work - x_up) / up : INF, down > up && gap > 0 ? gap / (down - up) : INF,
                        up > down && gap < BUFFER_BYTES ? (BUFFER_BYTES - gap) / (up - down) : INF};
      int kinds[3] = {UP_DRAINS, EMPTIES, FILLS};
      for (int k = 0; k < 3; ++k) {
        if (when[k] < t) {
          t = when[k];
          *what = kinds[k];
        }
      }
    }
    return t;
  }
};

// engine.py's bundle_events, as an indexed heap: heapq keeps every entry a bundle was given and skips the
// stale ones; here each bundle has at most its live one, moved in place when it changes. The live entries
// come out in the same order, (time, id): ids are unique, so it is a total order.
struct BundleEvent {
  double when;
  int64_t ident;
  int slot;
};

class EventHeap {
 public:
  bool empty() const { return items_.empty(); }
  const BundleEvent& top() const { return items_.front(); }

  void set(int slot, double when, int64_t ident) {
    if (slot >= static_cast<int>(pos_.size())) pos_.resize(slot + 1, -1);
    int i = pos_[slot];
    if (i < 0) {
      i = static_cast<int>(items_.size());
      items_.push_back(BundleEvent{when, ident, slot});
      pos_[slot] = i;
      up(i);
    } else {
      items_[i].when = when;
      items_[i].ident = ident;
      if (!up(i)) down(i);
    }
  }

  void remove(int slot) {
    if (slot >= static_cast<int>(pos_.size()) || pos_[slot] < 0) return;
    int i = pos_[slot];
    pos_[slot] = -1;
    int last = static_cast<int>(items_.size()) - 1;
    if (i != last) {
      items_[i] = items_[last];
      pos_[items_[i].slot] = i;
    }
    items_.pop_back();
    if (i != last && !up(i)) down(i);
  }

  void pop() { remove(items_.front().slot); }

 private:
  static bool before(const BundleEvent& a, const BundleEvent& b) {
    return a.when < b.when || (a.when == b.when && a.ident < b.ident);
  }

  void swap_items(int i, int j) {
    std::swap(items_[i], items_[j]);
    pos_[items_[i].slot] = i;
    pos_[items_[j].slot] = j;
  }

  bool up(int i) {
    bool moved = false;
    while (i > 0) {
      int parent = (i - 1) / 2;
      if (!before(items_[i], items_[parent])) break;
      swap_items(i, parent);
      i = parent;
      moved = true;
    }
    return moved;
  }

  void down(int i) {
    const int n = static_cast<int>(items_.size());
    while (true) {
      int first = i, l = 2 * i + 1, r = l + 1;
      if (l < n && before(items_[l], items_[first])) first = l;
      if (r < n && before(items_[r], items_[first])) first = r;
      if (first == i) return;
      swap_items(i, first);
      i = first;
    }
  }

  std::vector<BundleEvent> items_;
  std::vector<int> pos_;  // per slot: its entry's index in items_, -1 for none
};

// a group's rates: per (class, bound) pair of the memo key, its up and down rates
struct StageRates {
  int pair;  // class * 4 + bound
  double up;
  double down;
};

struct JobState {
  int64_t first;  // index of its first node in the flat node arrays
  int n;
  std::vector<int> dependent_off, dependents;  // node i's dependents: dependents[dependent_off[i]..[i + 1])
  std::vector<int> roots;
  std::vector<int> deps_left;
  std::vector<int> bundles_left;
  std::vector<double> started;
  int left = 0;
  double step_start = 0.0;
  double comm = 0.0;
  std::vector<double> ends;
  std::vector<double> comms;
};

struct VecHash {
  std::size_t operator()(const std::vector<int>& v) const {
    std::size_t h = 1469598103934665603ULL;
    for (int x : v) {
      h ^= static_cast<std::size_t>(x) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    }
    return h;
  }
};

struct Input {
  int n_jobs;
  const int64_t* job_node_off;
  const double* node_seconds;
  const uint8_t* node_comm;
  const double* node_comm_seconds;
  const int64_t* node_dep_off;
  const int32_t* dep_idx;
  const int64_t* node_bundle_off;
  const double* bundle_work;
  const int32_t* bundle_class;  // each bundle's class number (engine.py's: three per class, whole, up, down)
  int n_classes;  // class numbers; the arrays below are per number
  const double* class_cap;
  const int64_t* class_cross_off;
  const int32_t* cross_link;
  const double* cross_load;
  const int32_t* class_job;  // per class: its job (engine.py's class key names it where bursts can collide)
  const double* class_burst;  // per class: its burst rate (PhaseBundle.burst_rate)
  const double* class_exposed;  // per class: PhaseBundle.exposed; all 0 where bursts cannot collide
  const double* class_shown;  // per class: PhaseBundle.shown (seconds per byte shown when slowed)
  const uint8_t* class_two;  // per class: its bundles have two stages (engine.py's class_two)
  int n_links;
  const double* capacity;
  int64_t steps;  // < 0: steady state
  const int32_t* windows;  // per job: engine.py window_of
  double tolerance;
  int64_t max_steps;
  int64_t max_events;
  int64_t event_budget;
  const double* alone_steps;  // nullptr: no skipping
  const double* alone_comms;
};

class Run {
 public:
  explicit Run(const Input& in)
      : in_(in), dirty_link_(in.n_links, 0), link_users_(in.n_links) {
    jobs_.resize(in.n_jobs);
    for (int j = 0; j < in.n_jobs; ++j) {
      JobState& s = jobs_[j];
      s.first = in.job_node_off[j];
      s.n = static_cast<int>(in.job_node_off[j + 1] - s.first);
      // dependents in engine.py's order (per node, its dependents in increasing index), as flat arrays
      s.dependent_off.assign(s.n + 1, 0);
      for (int64_t d = in.node_dep_off[s.first]; d < in.node_dep_off[s.first + s.n]; ++d) {
        s.dependent_off[in.dep_idx[d] + 1] += 1;
      }
      for (int i = 0; i < s.n; ++i) s.dependent_off[i + 1] += s.dependent_off[i];
      s.dependents.resize(s.dependent_off[s.n]);
      std::vector<int> fill(s.dependent_off.begin(), s.dependent_off.end() - 1);
      for (int i = 0; i < s.n; ++i) {
        int64_t g = s.first + i;
        for (int64_t d = in.node_dep_off[g]; d < in.node_dep_off[g + 1]; ++d) s.dependents[fill[in.dep_idx[d]]++] = i;
        if (in.node_dep_off[g + 1] == in.node_dep_off[g]) s.roots.push_back(i);
      }
      s.started.assign(s.n, 0.0);
      s.bundles_left.assign(s.n, 0);
    }
  }

  void run() {
    for (int j = 0; j < in_.n_jobs; ++j) start_step(j);
    std::vector<int> finished;
    while (!heap_.empty() || live_count_ > 0) {
      if (done_ || events_ >= in_.max_events) break;
      double t_timer = heap_.empty() ? INF : heap_.front().when;
      double t_bundle = events_at_.empty() ? INF : events_at_.top().when;
      now_ = std::min(t_timer, t_bundle);
      if (now_ == INF) break;
      finished.clear();
      while (!events_at_.empty() && events_at_.top().when <= now_) {
        BundleEvent e = events_at_.top();
        events_at_.pop();
        Bundle& b = bundles_[e.slot];
        b.advance(now_);
        b.reach();
        for (int64_t c = in_.class_cross_off[b.cls]; c < in_.class_cross_off[b.cls + 1]; ++c) {
          mark_dirty(in_.cross_link[c]);
        }
        if (b.drained()) {
          b.live = false;
          live_count_ -= 1;
          finished.push_back(e.slot);
          for (int64_t c = in_.class_cross_off[b.cls]; c < in_.class_cross_off[b.cls + 1]; ++c) {
            std::vector<int>& on = link_users_[in_.cross_link[c]];
            for (std::size_t u = 0; u < on.size(); ++u) {
              if (on[u] == e.slot) {
                on[u] = on.back();
                on.pop_back();
                break;
              }
            }
          }
        }
      }
      for (int slot : finished) {
        // end_node only pushes timers: no bundle starts before the timer loop below, so the slot is freed after
        const Bundle& b = bundles_[slot];
        events_ += 1;
        JobState& s = jobs_[b.job];
        s.bundles_left[b.node] -= 1;
        if (s.bundles_left[b.node] == 0) end_node(b.job, b.node);
      }
      for (int slot : finished) free_slots_.push_back(slot);
      while (!heap_.empty() && heap_.front().when <= now_ && !done_) {
        std::pop_heap(heap_.begin(), heap_.end(), Later());
        Timer timer = heap_.back();
        heap_.pop_back();
        events_ += 1;
        int j = timer.job, i = timer.node;
        int64_t g = jobs_[j].first + i;
        int64_t b0 = in_.node_bundle_off[g], b1 = in_.node_bundle_off[g + 1];
        if (b1 > b0) {
          jobs_[j].bundles_left[i] = static_cast<int>(b1 - b0);
          for (int64_t k = b0; k < b1; ++k) start_bundle(j, i, k);
        } else {
          end_node(j, i);
        }
      }
      if (!dirty_list_.empty() && live_count_ > 0) assign_rates();
      for (int link : dirty_list_) dirty_link_[link] = 0;
      dirty_list_.clear();
    }
  }

  const JobState& job(int j) const { return jobs_[j]; }
  double now() const { return now_; }
  bool done() const { return done_; }
  int64_t events() const { return events_; }

 private:
  void push(double when, int job, int node) {
    seq_ += 1;
    heap_.push_back(Timer{when, seq_, job, node});
    std::push_heap(heap_.begin(), heap_.end(), Later());
  }

  void start_step(int j) {
    JobState& s = jobs_[j];
    s.deps_left.resize(s.n);
    for (int i = 0; i < s.n; ++i) {
      int64_t g = s.first + i;
      s.deps_left[i] = static_cast<int>(in_.node_dep_off[g + 1] - in_.node_dep_off[g]);
    }
    s.left = s.n;
    s.step_start = now_;
    s.comm = 0.0;
    for (int i : s.roots) start_node(j, i);
  }

  void start_node(int j, int i) {
    JobState& s = jobs_[j];
    s.started[i] = now_;
    push(now_ + in_.node_seconds[s.first + i], j, i);
  }

  void end_node(int j, int i) {
    JobState& s = jobs_[j];
    int64_t g = s.first + i;
    if (in_.node_comm[g]) {
      s.comm += now_ - s.started[i];
    } else {
      s.comm += in_.node_comm_seconds[g];
    }
    s.left -= 1;
    for (int k = s.dependent_off[i]; k < s.dependent_off[i + 1]; ++k) {
      int d = s.dependents[k];
      s.deps_left[d] -= 1;
      if (s.deps_left[d] == 0) start_node(j, d);
    }
    if (s.left == 0) {
      s.ends.push_back(now_);
      s.comms.push_back(s.comm);
      if (should_stop()) {
        done_ = true;
      } else {
        start_step(j);
        if (in_.alone_steps != nullptr) skip_undisturbed(j);
      }
    }
  }

  void skip_undisturbed(int j) {
    double alone = in_.alone_steps[j];
    if (live_count_ > 0 || alone <= 0) return;
    double horizon = INF;
    for (const Timer& t : heap_) {
      if (t.job != j) horizon = std::min(horizon, t.when);
    }
    if (!std::isfinite(horizon)) return;
    double kf = std::floor((horizon - now_) / alone) - 1;
    JobState& s = jobs_[j];
    if (in_.steps >= 0) kf = std::min(kf, static_cast<double>(in_.steps - static_cast<int64_t>(s.ends.size())));
    if (kf < 1) return;
    int64_t k = static_cast<int64_t>(kf);
    std::vector<Timer> others;
    others.reserve(heap_.size());
    for (const Timer& t : heap_) {
      if (t.job != j) others.push_back(t);
    }
    heap_.swap(others);
    std::make_heap(heap_.begin(), heap_.end(), Later());
    double base = now_;
    for (int64_t n = 1; n <= k; ++n) {
      s.ends.push_back(base + static_cast<double>(n) * alone);
      s.comms.push_back(in_.alone_comms[j]);
    }
    double saved = now_;
    now_ = base + static_cast<double>(k) * alone;
    start_step(j);
    now_ = saved;
  }

  // engine.py: a bundle of node i of job j starts (a new _Bundle); one crossing no shared link at its cap
  void start_bundle(int j, int i, int64_t k) {
    int slot;
    if (free_slots_.empty()) {
      slot = static_cast<int>(bundles_.size());
      bundles_.emplace_back();
      slot_seen_.push_back(0);
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    int cls = in_.bundle_class[k];
    bundles_[slot] = Bundle{next_ident_++, j, i, in_.bundle_work[k], cls, in_.class_two[cls] != 0, 0.0, 0.0, 0.0,
                            0.0, now_, 0, DRAINS, -1, true};
    live_count_ += 1;
    int64_t c0 = in_.class_cross_off[cls], c1 = in_.class_cross_off[cls + 1];
    for (int64_t c = c0; c < c1; ++c) {
      link_users_[in_.cross_link[c]].push_back(slot);
      mark_dirty(in_.cross_link[c]);
    }
    if (c1 == c0) {
      bundles_[slot].rate_up = in_.class_cap[cls];
      bundles_[slot].rate_down = in_.class_cap[cls];
      reschedule(slot);
    }
  }

  // engine.py reschedule: the bundle's next event, in place of the one it had (none at rate 0)
  void reschedule(int slot) {
    Bundle& b = bundles_[slot];
    b.version += 1;
    int kind;
    double t = b.next_event(&kind);
    b.kind = kind;
    if (t < INF) {
      events_at_.set(slot, now_ + t, b.ident);
    } else {
      events_at_.remove(slot);
    }
  }

  void mark_dirty(int link) {
    if (!dirty_link_[link]) {
      dirty_link_[link] = 1;
      dirty_list_.push_back(link);
    }
  }

  // engine.py: groups_sharing over the live bundles' links, and each group holding a dirty link re-shared:
  // its members brought to now, their rates from the group's sorted (class, bound) pairs (staged_rates). Each
  // such group is found by a search from a dirty link over the links its bundles cross (link_users_): a cost
  // of the groups' size, not of every live bundle. Groups are disjoint and each one's rates are a function
  // of its pairs alone, so the order they are visited in changes nothing.
  void assign_rates() {
    ++epoch_;
    for (int start : dirty_list_) {
      if (link_users_[start].empty() || slot_seen_[link_users_[start][0]] == epoch_) continue;
      group_.clear();
      for (int slot : link_users_[start]) {
        if (slot_seen_[slot] != epoch_) {
          slot_seen_[slot] = epoch_;
          group_.push_back(slot);
        }
      }
      for (std::size_t g = 0; g < group_.size(); ++g) {
        int cls = bundles_[group_[g]].cls;
        for (int64_t c = in_.class_cross_off[cls]; c < in_.class_cross_off[cls + 1]; ++c) {
          for (int slot : link_users_[in_.cross_link[c]]) {
            if (slot_seen_[slot] != epoch_) {
              slot_seen_[slot] = epoch_;
              group_.push_back(slot);
            }
          }
        }
      }
      key_.clear();
      bounds_.clear();
      for (int slot : group_) {
        Bundle& b = bundles_[slot];
        b.advance(now_);
        bounds_.push_back(b.bound());
        key_.push_back(b.cls * 4 + bounds_.back());
      }
      std::sort(key_.begin(), key_.end());
      const std::vector<StageRates>& found = staged_rates(key_);
      for (std::size_t g = 0; g < group_.size(); ++g) {
        Bundle& b = bundles_[group_[g]];
        int k = bounds_[g];
        const StageRates& r = lookup(found, b.cls * 4 + k);
        if (r.up != b.rate_up || r.down != b.rate_down || b.version == 0 || k != b.bound_seen) {
          b.rate_up = r.up;
          b.rate_down = r.down;
          reschedule(group_[g]);
        }
        b.bound_seen = k;
      }
    }
  }

  static const StageRates& lookup(const std::vector<StageRates>& found, int pair) {
    // found follows the sorted key: the last entry of the pair, as a Python dict built from the pairs keeps
    // (all of them equal anyway)
    auto it = std::upper_bound(found.begin(), found.end(), pair,
                               [](int p, const StageRates& r) { return p < r.pair; });
    if (it == found.begin() || (it - 1)->pair != pair) throw std::logic_error("a bundle's pair missing from its rates");
    return *(it - 1);
  }

  // engine.py flow_rates: max-min rates of flows of these class numbers (sorted), memoised
  const std::vector<double>& flow_rates(const std::vector<int>& classes) {
    auto it = memo_.find(classes);
    if (it != memo_.end()) return it->second;
    if (memo_.size() >= MAX_RATE_MEMO) memo_.clear();
    std::vector<double> caps(classes.size());
    for (std::size_t f = 0; f < classes.size(); ++f) caps[f] = in_.class_cap[classes[f]];
    collision_caps(classes, caps);
    return memo_.emplace(classes, rates_shown(classes, caps)).first->second;
  }

  // engine.py _staged_rates: max-min over flows, a two-stage bundle split into its up and down stages until
  // its bound binds (then coupled: one flow on all its links), recomputed until no bound binds
  const std::vector<StageRates>& staged_rates(const std::vector<int>& key) {
    const std::size_t n = key.size();
    std::vector<char>& coupled = st_.coupled;
    coupled.resize(n);
    for (std::size_t m = 0; m < n; ++m) {
      int c = key[m] / 4, k = key[m] % 4;
      coupled[m] = !in_.class_two[c] || k == UP_DONE;
    }
    std::vector<double>& up = st_.up;
    std::vector<double>& down = st_.down;
    up.resize(n);
    down.resize(n);
    std::vector<StagedFlow>& flows = st_.flows;
    std::vector<int>& classes = st_.classes;
    for (std::size_t round = 0; round < n + 1; ++round) {
      flows.clear();
      for (std::size_t m = 0; m < n; ++m) {
        int c = key[m] / 4, k = key[m] % 4;
        int member = static_cast<int>(m);
        if (in_.class_two[c] && k == UP_DONE) {
          flows.push_back(StagedFlow{c + DOWN, member, DOWN});
        } else if (coupled[m]) {
          flows.push_back(StagedFlow{c + BOTH, member, BOTH});
        } else {
          flows.push_back(StagedFlow{c + UP, member, UP});
          flows.push_back(StagedFlow{c + DOWN, member, DOWN});
        }
      }
      // class order (flows of one class are alike: their order among themselves is moot; by member here)
      std::sort(flows.begin(), flows.end(), [](const StagedFlow& a, const StagedFlow& b) {
        return a.cls < b.cls || (a.cls == b.cls && (a.member < b.member || (a.member == b.member && a.stage < b.stage)));
      });
      classes.clear();
      for (const StagedFlow& f : flows) classes.push_back(f.cls);
      const std::vector<double>& rates = flow_rates(classes);
      std::fill(up.begin(), up.end(), 0.0);
      std::fill(down.begin(), down.end(), 0.0);
      for (std::size_t f = 0; f < flows.size(); ++f) {
        if (flows[f].stage != DOWN) up[flows[f].member] = rates[f];
        if (flows[f].stage != UP) down[flows[f].member] = rates[f];
      }
      bool more = false;
      for (std::size_t m = 0; m < n; ++m) {
        int k = key[m] % 4;
        if (!coupled[m] && ((k == EMPTY && down[m] > up[m]) || (k == FULL && up[m] > down[m]))) {
          coupled[m] = 1;
          more = true;
        }
      }
      if (!more) break;
    }
    std::vector<StageRates>& found = st_.found;
    found.clear();
    for (std::size_t m = 0; m < n; ++m) {
      int c = key[m] / 4, k = key[m] % 4;
      found.push_back(StageRates{key[m], in_.class_two[c] && k == UP_DONE ? 0.0 : up[m], down[m]});
    }
    return found;
  }

  // engine.py _collision_caps: per flow (classes in order) that shows latency when its bursts collide,
  // its cap lowered to 1 / (1 / cap + P exposed), P from the other jobs' caps on its links (class order)
  void collision_caps(const std::vector<int>& classes, std::vector<double>& caps) const {
    for (std::size_t f = 0; f < classes.size(); ++f) {
      int cls = classes[f];
      double exposed = in_.class_exposed[cls];
      if (!(exposed > 0)) continue;
      int job = in_.class_job[cls];
      double p = 0.0;
      for (int64_t c = in_.class_cross_off[cls]; c < in_.class_cross_off[cls + 1]; ++c) {
        int link = in_.cross_link[c];
        double others = 0.0;
        for (int other : classes) {
          if (in_.class_job[other] == job) continue;
          for (int64_t c2 = in_.class_cross_off[other]; c2 < in_.class_cross_off[other + 1]; ++c2) {
            if (in_.cross_link[c2] == link) others += in_.class_cap[other] * in_.cross_load[c2];
          }
        }
        // its peak on the link: sibling channels take turns at their NIC (engine.py _collision_caps)
        double burst = std::max(in_.class_burst[cls], in_.class_cap[cls] * in_.cross_load[c]);
        p = std::max(p, (others - (in_.capacity[link] - burst)) / burst);
      }
      p = std::min(1.0, p);
      if (p > 0) caps[f] = 1.0 / (1.0 / caps[f] + p * exposed);
    }
  }

  // engine.py _rates (below SMALL flows: max_min_rates_small's order of operations, else max_min_rates'),
  // each flow's loads multiplied by duty[f] where duty is given and duty[f] != 1 (as engine.py weights them)
  std::vector<double> rates(const std::vector<int>& classes, const std::vector<double>& caps,
                            const std::vector<double>* duty = nullptr) {
    return classes.size() < SMALL ? rates_small(classes, caps, duty) : rates_numpy(classes, caps, duty);
  }

  // engine.py _rates_shown: where some flows show their hop latency when slowed, the fixed point of their
  // duties (rate / sending share) with each such flow's loads weighted by its duty; else _rates
  std::vector<double> rates_shown(const std::vector<int>& classes, std::vector<double>& caps) {
    const std::size_t flows = classes.size();
    bool any = false;
    for (int cls : classes) {
      if (in_.class_shown[cls] > 0) any = true;
    }
    if (!any) return rates(classes, caps);
    for (std::size_t f = 0; f < flows; ++f) {
      double x = in_.class_shown[classes[f]];
      if (x > 0) caps[f] = sending_cap(classes[f], caps[f], x);
    }
    std::vector<double> duty(flows, 1.0), next(flows, 1.0), s;
    for (int k = 0; k < SHOWN_ITERATIONS; ++k) {
      s = rates(classes, caps, &duty);
      bool settled = true;
      for (std::size_t f = 0; f < flows; ++f) {
        double x = in_.class_shown[classes[f]];
        next[f] = (x > 0 && s[f] > 0) ? 1.0 / (1.0 + x * s[f]) : 1.0;
        if (!(std::fabs(next[f] - duty[f]) <= 1e-9)) settled = false;
      }
      duty.swap(next);
      if (settled) break;
    }
    for (std::size_t f = 0; f < flows; ++f) s[f] = s[f] * duty[f];
    return s;
  }

  // engine.py _sending_cap: a flow's bandwidth alone (1 / (1 / cap - shown)), and no more than its links carry
  double sending_cap(int cls, double cap, double shown) const {
    double v = 1.0 / (1.0 / cap - shown);
    for (int64_t c = in_.class_cross_off[cls]; c < in_.class_cross_off[cls + 1]; ++c) {
      v = std::min(v, in_.capacity[in_.cross_link[c]] / in_.cross_load[c]);
    }
    return v;
  }

  // the load of crossing c of flow f: its class's load, times the flow's duty where one is given and != 1
  static double weighted(double load, const std::vector<double>* duty, std::size_t f) {
    return (duty != nullptr && (*duty)[f] != 1.0) ? load * (*duty)[f] : load;
  }

  // flow/maxmin.py max_min_rates_small with engine.py _rates' flows: shared links 0..L-1, flow f's
  // private link (its cap, caps[f]) numbered L + f; weights 1, one priority level.
  std::vector<double> rates_small(const std::vector<int>& classes, const std::vector<double>& caps,
                                  const std::vector<double>* duty) {
    const std::size_t flows = classes.size();
    const int L = in_.n_links;
    std::vector<double> rate(flows, 0.0);
    std::vector<double> remaining(L + flows, 0.0);
    std::vector<std::vector<std::pair<int, double>>> members(L + flows);
    std::vector<int> used_links;
    std::vector<char> listed(L + flows, 0);
    for (std::size_t f = 0; f < flows; ++f) {
      int cls = classes[f];
      for (int64_t c = in_.class_cross_off[cls]; c < in_.class_cross_off[cls + 1]; ++c) {
        int link = in_.cross_link[c];
        members[link].emplace_back(static_cast<int>(f), weighted(in_.cross_load[c], duty, f));
        remaining[link] = in_.capacity[link];
        if (!listed[link]) {
          listed[link] = 1;
          used_links.push_back(link);
        }
      }
      int own = L + static_cast<int>(f);
      members[own].emplace_back(static_cast<int>(f), 1.0);
      remaining[own] = caps[f];
      listed[own] = 1;
      used_links.push_back(own);
    }
    std::vector<char> filling(flows, 1), frozen(flows, 0);
    std::size_t left = flows;
    std::vector<double> share(L + flows, INF);
    std::vector<char> has_share(L + flows, 0);
    std::vector<char> newly(flows, 0);
    while (left) {
      double level = INF;
      bool any = false;
      for (int link : used_links) {
        double w = 0.0;
        for (const auto& fm : members[link]) {
          if (filling[fm.first]) w += 1.0 * fm.second;
        }
        has_share[link] = w > 0;
        if (w > 0) {
          share[link] = remaining[link] / w;
          if (!any || share[link] < level) level = share[link];
          any = true;
        }
      }
      if (!any) throw std::runtime_error("a flow crosses no link");
      std::fill(newly.begin(), newly.end(), 0);
      for (int link : used_links) {
        if (has_share[link] && share[link] <= level * (1.0 + TIE)) {
          for (const auto& fm : members[link]) {
            if (!frozen[fm.first]) newly[fm.first] = 1;
          }
        }
      }
      for (std::size_t f = 0; f < flows; ++f) {
        if (!newly[f]) continue;
        if (filling[f]) {
          rate[f] = 1.0 * level;
          filling[f] = 0;
          left -= 1;
        }
        frozen[f] = 1;
      }
      for (std::size_t f = 0; f < flows; ++f) {
        if (!newly[f]) continue;
        int cls = classes[f];
        for (int64_t c = in_.class_cross_off[cls]; c < in_.class_cross_off[cls + 1]; ++c) {
          int link = in_.cross_link[c];
          double used = rate[f] * weighted(in_.cross_load[c], duty, f);
          remaining[link] = std::max(0.0, remaining[link] - used);
        }
        int own = L + static_cast<int>(f);
        double used = rate[f] * 1.0;
        remaining[own] = std::max(0.0, remaining[own] - used);
      }
    }
    return rate;
  }

  // flow/maxmin.py max_min_rates (numpy, multiplicity = loads) with engine.py _rates' crossings:
  // per flow its shared crossings then its private link L + f; bincount sums in crossing order. The same
  // floating-point operations on every value that can change, so numpy's answers bit for bit, at a cost per
  // round of the shared links and the crossings of the flows that freeze, not of every link and crossing
  // (a call has ~15 shared links, ~70 private ones and 100-160 crossings over 14-20 rounds):
  // - only the links the flows cross take part (numbered here in order of first use): numpy's other links
  //   keep count 0 and their remaining capacity;
  // - a link's count (the loads of its crossings still filling, summed in crossing order) and its share are
  //   recomputed when a flow on it freezes; numpy recomputes them every round from the same terms;
  // - a private link holds its own flow alone, so its share is that flow's cap until the flow freezes: the
  //   smallest over the flows still filling is the first of them in cap order;
  // - a round's frozen flows add their crossings to `minus` flow by flow in order: per link, crossing order.
  std::vector<double> rates_numpy(const std::vector<int>& classes, const std::vector<double>& caps,
                                  const std::vector<double>* duty) {
    MaxMinScratch& m = mm_;
    const int flows = static_cast<int>(classes.size());
    if (local_link_.empty()) local_link_.assign(in_.n_links, -1);
    m.used.clear();
    m.link_of.clear();
    m.load.clear();
    m.remaining.clear();
    m.cross_off.assign(flows + 1, 0);
    // local numbers: the shared links in order of first use, then flow f's private link shared + f
    for (int f = 0; f < flows; ++f) {
      for (int64_t c = in_.class_cross_off[classes[f]]; c < in_.class_cross_off[classes[f] + 1]; ++c) {
        int link = in_.cross_link[c];
        if (local_link_[link] < 0) {
          local_link_[link] = static_cast<int>(m.remaining.size());
          m.used.push_back(link);
          m.remaining.push_back(in_.capacity[link]);
        }
      }
    }
    const int shared = static_cast<int>(m.used.size());
    for (int f = 0; f < flows; ++f) {
      int cls = classes[f];
      for (int64_t c = in_.class_cross_off[cls]; c < in_.class_cross_off[cls + 1]; ++c) {
        m.link_of.push_back(local_link_[in_.cross_link[c]]);
        m.load.push_back(weighted(in_.cross_load[c], duty, f));
      }
      m.link_of.push_back(shared + f);
      m.load.push_back(1.0);
      m.remaining.push_back(caps[f]);
      m.cross_off[f + 1] = static_cast<int>(m.link_of.size());
    }
    for (int link : m.used) local_link_[link] = -1;
    const int links = static_cast<int>(m.remaining.size());
    const int crossings = static_cast<int>(m.link_of.size());
    // the crossings of each link in crossing order (CSR), and each crossing's flow
    m.link_off.assign(links + 1, 0);
    for (int c = 0; c < crossings; ++c) m.link_off[m.link_of[c] + 1] += 1;
    for (int l = 0; l < links; ++l) m.link_off[l + 1] += m.link_off[l];
    m.on_link.resize(crossings);
    m.fill.assign(m.link_off.begin(), m.link_off.end() - 1);
    m.flow_of.resize(crossings);
    for (int f = 0; f < flows; ++f) {
      for (int c = m.cross_off[f]; c < m.cross_off[f + 1]; ++c) {
        m.flow_of[c] = f;
        m.on_link[m.fill[m.link_of[c]]++] = c;
      }
    }
    m.alive.assign(crossings, 1);
    m.count.resize(links);
    m.share.resize(links);
    m.minus.assign(links, 0.0);
    m.touched_flag.assign(links, 0);
    for (int l = 0; l < links; ++l) recount(l);
    m.by_cap.resize(flows);
    m.cap_share.resize(flows);
    for (int f = 0; f < flows; ++f) {
      m.by_cap[f] = f;
      m.cap_share[f] = m.share[shared + f];
    }
    std::stable_sort(m.by_cap.begin(), m.by_cap.end(), [&m](int a, int b) { return m.cap_share[a] < m.cap_share[b]; });
    std::vector<double> rate(flows, 0.0);
    m.frozen.assign(flows, 0);
    m.newly.assign(flows, 0);
    int next_cap = 0;
    while (true) {
      while (next_cap < flows && m.frozen[m.by_cap[next_cap]]) ++next_cap;
      bool any = false;
      double level = INF;
      for (int l = 0; l < shared; ++l) {
        if (m.count[l] > 0) {
          any = true;
          level = std::min(level, m.share[l]);
        }
      }
      if (next_cap < flows) {
        any = true;
        level = std::min(level, m.cap_share[m.by_cap[next_cap]]);
      }
      if (!any) break;
      const double bottleneck = level * (1.0 + TIE);
      m.froze.clear();
      for (int l = 0; l < shared; ++l) {
        if (m.count[l] > 0 && m.share[l] <= bottleneck) {
          for (int k = m.link_off[l]; k < m.link_off[l + 1]; ++k) {
            int c = m.on_link[k];
            if (m.alive[c] && !m.newly[m.flow_of[c]]) {
              m.newly[m.flow_of[c]] = 1;
              m.froze.push_back(m.flow_of[c]);
            }
          }
        }
      }
      for (int k = next_cap; k < flows && m.cap_share[m.by_cap[k]] <= bottleneck; ++k) {
        int f = m.by_cap[k];
        if (!m.frozen[f] && !m.newly[f]) {
          m.newly[f] = 1;
          m.froze.push_back(f);
        }
      }
      std::sort(m.froze.begin(), m.froze.end());
      m.touched.clear();
      for (int f : m.froze) {
        rate[f] = 1.0 * level;
        m.frozen[f] = 1;
        m.newly[f] = 0;
        for (int c = m.cross_off[f]; c < m.cross_off[f + 1]; ++c) {
          int l = m.link_of[c];
          if (!m.touched_flag[l]) {
            m.touched_flag[l] = 1;
            m.touched.push_back(l);
          }
          m.minus[l] += rate[f] * m.load[c];
          m.alive[c] = 0;
        }
      }
      for (int l : m.touched) {
        m.remaining[l] -= m.minus[l];
        m.remaining[l] = std::max(m.remaining[l], 0.0);
        m.minus[l] = 0.0;
        m.touched_flag[l] = 0;
        recount(l);
      }
    }
    for (int f = 0; f < flows; ++f) {
      if (!m.frozen[f]) throw std::runtime_error("a flow crosses no link");
    }
    return rate;
  }

  // rates_numpy: link l's count (its live crossings' loads in crossing order, as bincount sums them) and share
  void recount(int l) {
    MaxMinScratch& m = mm_;
    double sum = 0.0;
    for (int k = m.link_off[l]; k < m.link_off[l + 1]; ++k) {
      int c = m.on_link[k];
      if (m.alive[c]) sum += 1.0 * m.load[c];
    }
    m.count[l] = sum;
    m.share[l] = sum > 0 ? m.remaining[l] / sum : INF;
  }

  // engine.py _slowest, _should_stop, _spans, _mean_over, _converged
  int slowest() const {
    int best = 0;
    double best_ratio = -INF;
    for (int j = 0; j < in_.n_jobs; ++j) {
      const JobState& s = jobs_[j];
      double ratio = s.ends.back() / static_cast<double>(s.ends.size());
      if (j == 0 || ratio > best_ratio) {
        best = j;
        best_ratio = ratio;
      }
    }
    return best;
  }

  bool should_stop() const {
    bool over_budget = events_ >= in_.event_budget;
    if (in_.steps >= 0) {
      for (const JobState& s : jobs_) {
        if (static_cast<int64_t>(s.ends.size()) < in_.steps) return false;
      }
      return true;
    }
    for (const JobState& s : jobs_) {
      if (s.ends.empty()) return false;
    }
    const JobState& slow = jobs_[slowest()];
    if (static_cast<int64_t>(slow.ends.size()) >= in_.max_steps) return true;
    if (over_budget) return true;  // every job has ended a step (checked above)
    double spans[3];
    if (!get_spans(spans)) return false;
    for (const JobState& s : jobs_) {
      if (!converged(s, spans)) return false;
    }
    return true;
  }

  bool get_spans(double* spans) const {
    double horizon = INF;
    for (const JobState& s : jobs_) {
      if (s.ends.empty()) return false;
      horizon = std::min(horizon, s.ends.back());
    }
    const JobState& slow = jobs_[slowest()];
    std::size_t n = std::upper_bound(slow.ends.begin(), slow.ends.end(), horizon * (1 + 1e-12)) - slow.ends.begin();
    std::size_t w = static_cast<std::size_t>(in_.windows[slowest()]);
    if (n < 2 * w + 1) return false;
    spans[0] = slow.ends[n - 1 - 2 * w];
    spans[1] = slow.ends[n - 1 - w];
    spans[2] = slow.ends[n - 1];
    return true;
  }

  static bool mean_over(const JobState& s, double a, double b, double* mean) {
    std::size_t lo = std::lower_bound(s.ends.begin(), s.ends.end(), a * (1 - 1e-12)) - s.ends.begin();
    std::size_t hi = std::upper_bound(s.ends.begin(), s.ends.end(), b * (1 + 1e-12)) - s.ends.begin();
    if (hi < lo + 2) return false;
    *mean = (s.ends[hi - 1] - s.ends[lo]) / static_cast<double>(hi - 1 - lo);
    return true;
  }

  bool converged(const JobState& s, const double* spans) const {
    double last, before;
    if (!mean_over(s, spans[1], spans[2], &last) || !mean_over(s, spans[0], spans[1], &before)) return false;
    return std::fabs(last - before) <= in_.tolerance * last;
  }

  const Input& in_;
  std::vector<JobState> jobs_;
  std::vector<Timer> heap_;
  std::vector<Bundle> bundles_;  // by slot: live ones and freed slots
  std::unordered_map<std::vector<int>, std::vector<double>, VecHash> memo_;  // engine.py rates_of
  std::vector<char> dirty_link_;
  std::vector<int> dirty_list_;  // the links marked in dirty_link_, each once (engine.py's `dirty`)
  std::vector<std::vector<int>> link_users_;  // per shared link: slots of the live bundles crossing it
  std::vector<int> free_slots_;  // slots of drained bundles, reused last freed first
  EventHeap events_at_;  // engine.py's bundle_events (their live entries)
  int live_count_ = 0;
  int64_t next_ident_ = 0;
  std::vector<int64_t> slot_seen_;  // per slot: the assign_rates call (epoch_) that last reached it
  int64_t epoch_ = 0;
  std::vector<int> group_, key_, bounds_;
  struct MaxMinScratch {
    std::vector<int> used, link_of, cross_off, link_off, on_link, fill, flow_of, by_cap, froze, touched;
    std::vector<double> load, remaining, count, share, minus, cap_share;
    std::vector<char> alive, frozen, newly, touched_flag;
  } mm_;  // rates_numpy's working vectors, reused
  struct StagedFlow {
    int cls;
    int member;
    int stage;
  };
  struct StagedScratch {
    std::vector<char> coupled;
    std::vector<double> up, down;
    std::vector<StagedFlow> flows;
    std::vector<int> classes;
    std::vector<StageRates> found;
  } st_;  // staged_rates' working vectors, reused
  std::vector<int> local_link_;  // rates_numpy's numbering of the links its flows cross (-1: none)
  int64_t seq_ = 0;
  int64_t events_ = 0;
  double now_ = 0.0;
  bool done_ = false;
};

struct Result {
  Input input;
  Run* run = nullptr;
  std::string error;
};

}  // namespace

extern "C" {

// Runs the engine; returns a handle for the accessors below (phase_free releases it). On an error
// (a bundle crossing no link) phase_error returns its message and the accessors must not be used.
void* phase_run(int n_jobs, const int64_t* job_node_off, const double* node_seconds, const uint8_t* node_comm,
                const double* node_comm_seconds, const int64_t* node_dep_off, const int32_t* dep_idx,
                const int64_t* node_bundle_off, const double* bundle_work, const int32_t* bundle_class,
                int n_classes, const double* class_cap, const int64_t* class_cross_off, const int32_t* cross_link,
                const double* cross_load, const int32_t* class_job, const double* class_burst,
                const double* class_exposed, const double* class_shown, const uint8_t* class_two, int n_links, const double* capacity,
                int64_t steps, const int32_t* windows,
                double tolerance, int64_t max_steps, int64_t max_events, int64_t event_budget,
                const double* alone_steps,
                const double* alone_comms) {
  Result* r = new Result();
  r->input = Input{n_jobs, job_node_off, node_seconds, node_comm, node_comm_seconds, node_dep_off, dep_idx,
                   node_bundle_off, bundle_work, bundle_class, n_classes, class_cap, class_cross_off, cross_link,
                   cross_load, class_job, class_burst, class_exposed, class_shown, class_two, n_links, capacity, steps, windows,
                   tolerance,
                   max_steps, max_events, event_budget,
                   alone_steps,
                   alone_comms};
  try {
    r->run = new Run(r->input);
    r->run->run();
  } catch (const std::exception& e) {
    r->error = e.what();
  }
  return r;
}

const char* phase_error(void* h) { return static_cast<Result*>(h)->error.c_str(); }
double phase_now(void* h) { return static_cast<Result*>(h)->run->now(); }
int phase_done(void* h) { return static_cast<Result*>(h)->run->done() ? 1 : 0; }
int64_t phase_events(void* h) { return static_cast<Result*>(h)->run->events(); }
int64_t phase_steps(void* h, int j) { return static_cast<int64_t>(static_cast<Result*>(h)->run->job(j).ends.size()); }
double phase_comm(void* h, int j) { return static_cast<Result*>(h)->run->job(j).comm; }

void phase_copy(void* h, int j, double* ends, double* comms) {
  const JobState& s = static_cast<Result*>(h)->run->job(j);
  if (!s.ends.empty()) {
    std::memcpy(ends, s.ends.data(), s.ends.size() * sizeof(double));
    std::memcpy(comms, s.comms.data(), s.comms.size() * sizeof(double));
  }
}

void phase_free(void* h) {
  Result* r = static_cast<Result*>(h);
  delete r->run;
  delete r;
}

}  // extern "C"
