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

// engine.py's active bundle (its slot is its index in Run::active_)
struct Active {
  int job;
  int node;
  double remaining;  // bytes left at `since`
  double work;
  int cls;
  double rate;
  double since;
  bool live;
  bool pending;  // started at this instant: its drain entry is pushed once the instant's rates are known
};

// engine.py's drain entry (time, slot, version): heapq's order on the tuple, a total order
struct Drain {
  double when;
  int slot;
  int64_t version;
};

struct DrainLater {
  bool operator()(const Drain& a, const Drain& b) const {
    if (a.when != b.when) return a.when > b.when;
    if (a.slot != b.slot) return a.slot > b.slot;
    return a.version > b.version;
  }
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
  const int32_t* bundle_class;
  int n_classes;
  const double* class_cap;
  const int64_t* class_cross_off;
  const int32_t* cross_link;
  const double* cross_load;
  const int32_t* class_job;  // per class: its job (engine.py's class key names it where bursts can collide)
  const double* class_burst;  // per class: its burst rate (PhaseBundle.burst_rate)
  const double* class_exposed;  // per class: PhaseBundle.exposed; all 0 where bursts cannot collide
  const double* class_shown;  // per class: PhaseBundle.shown (seconds per byte shown when slowed)
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
    while (!heap_.empty() || active_count_ > 0) {
      if (done_ || events_ >= in_.max_events) break;
      double t_timer = heap_.empty() ? INF : heap_.front().when;
      int first = active_count_ > 0 ? next_drain() : -1;
      double t_drain = first >= 0 ? drains_.front().when : INF;
      now_ = std::min(t_timer, t_drain);
      if (now_ == INF) break;
      finished.clear();
      while (first >= 0 && drains_.front().when - now_ <= 1e-9 * active_[first].work / active_[first].rate) {
        std::pop_heap(drains_.begin(), drains_.end(), DrainLater());
        drains_.pop_back();
        active_[first].live = false;
        active_count_ -= 1;
        free_slots_.push_back(first);
        finished.push_back(first);
        first = next_drain();
      }
      for (int slot : finished) {
        const Active& a = active_[slot];
        for (int64_t c = in_.class_cross_off[a.cls]; c < in_.class_cross_off[a.cls + 1]; ++c) {
          int link = in_.cross_link[c];
          mark_dirty(link);
          std::vector<int>& on = link_users_[link];
          for (std::size_t u = 0; u < on.size(); ++u) {
            if (on[u] == slot) {
              on[u] = on.back();
              on.pop_back();
              break;
            }
          }
          if (!on.empty()) changed_ = true;  // engine.py: users left on the link
        }
      }
      for (int slot : finished) {
        // end_node only pushes timers: no bundle starts (nor reuses a slot) before the timer loop below
        const Active& a = active_[slot];
        events_ += 1;
        JobState& s = jobs_[a.job];
        s.bundles_left[a.node] -= 1;
        if (s.bundles_left[a.node] == 0) end_node(a.job, a.node);
      }
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
          for (int64_t b = b0; b < b1; ++b) {
            int slot;
            if (free_slots_.empty()) {
              slot = static_cast<int>(active_.size());
              active_.emplace_back();
              versions_.push_back(0);
              slot_seen_.push_back(0);
            } else {
              slot = free_slots_.back();
              free_slots_.pop_back();
            }
            int cls = in_.bundle_class[b];
            double rate = in_.class_cap[cls];
            for (int64_t c = in_.class_cross_off[cls]; c < in_.class_cross_off[cls + 1]; ++c) {
              int link = in_.cross_link[c];
              link_users_[link].push_back(slot);
              mark_dirty(link);
              if (link_users_[link].size() > 1) changed_ = true;
              rate = std::min(rate, in_.capacity[link] / in_.cross_load[c]);
            }
            double shown = in_.class_shown[cls];
            if (shown > 0) {  // engine.py: its mean rate at its sending rate, as rates_shown gives it alone
              double v = sending_cap(cls, in_.class_cap[cls], shown);
              rate = v * (1.0 / (1.0 + shown * v));
            }
            active_[slot] = Active{j, i, in_.bundle_work[b], in_.bundle_work[b], cls, rate, now_, true, true};
            active_count_ += 1;
            pending_.push_back(slot);  // its drain time once this instant's rates are known
          }
        } else {
          end_node(j, i);
        }
      }
      if (changed_ && active_count_ > 0) assign_rates();
      changed_ = false;
      // bundles started at this instant: one drain entry at their rate after re-sharing (engine.py pushes
      // one at start and another if the rate changes; the live entry is the same)
      for (int slot : pending_) {
        active_[slot].pending = false;
        schedule_drain(slot);
      }
      pending_.clear();
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
    if (active_count_ > 0 || alone <= 0) return;
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

  static double lookup(const std::vector<std::pair<int, double>>& found, int cls) {
    // the last entry of the class, as a Python dict built from the pairs keeps (equal values anyway)
    for (std::size_t k = found.size(); k-- > 0;) {
      if (found[k].first == cls) return found[k].second;
    }
    return 0.0;
  }

  // engine.py set_rate, schedule_drain, next_drain
  void set_rate(int slot, double rate) {
    Active& a = active_[slot];
    a.remaining -= a.rate * (now_ - a.since);
    a.since = now_;
    a.rate = rate;
    if (!a.pending) schedule_drain(slot);
  }

  void schedule_drain(int slot) {
    versions_[slot] += 1;
    const Active& a = active_[slot];
    if (a.rate > 0) {
      drains_.push_back(Drain{a.since + a.remaining / a.rate, slot, versions_[slot]});
      std::push_heap(drains_.begin(), drains_.end(), DrainLater());
    }
  }

  int next_drain() {
    while (!drains_.empty()) {
      const Drain& d = drains_.front();
      if (active_[d.slot].live && versions_[d.slot] == d.version) return d.slot;
      std::pop_heap(drains_.begin(), drains_.end(), DrainLater());
      drains_.pop_back();
    }
    return -1;
  }

  void mark_dirty(int link) {
    if (!dirty_link_[link]) {
      dirty_link_[link] = 1;
      dirty_list_.push_back(link);
    }
  }

  // engine.py: groups_sharing over the active bundles' links, then each group's rates from the memo by
  // its sorted classes. Only the groups holding a link where a bundle started or drained since the last
  // call are looked up again: every other group keeps its set of classes, so the memo would give it the
  // rates it has (engine.py looks every group up; the same values). Each such group is found by a search
  // from that link over the links its bundles cross (link_users_): a cost of the groups' size, not of
  // every active bundle (a 30-job component holds ~75 active bundles, its changed groups 2-4).
  void assign_rates() {
    ++epoch_;
    for (int start : dirty_list_) {
      dirty_link_[start] = 0;
      if (link_users_[start].empty() || slot_seen_[link_users_[start][0]] == epoch_) continue;
      group_.clear();
      key_.clear();
      for (int slot : link_users_[start]) {
        if (slot_seen_[slot] != epoch_) {
          slot_seen_[slot] = epoch_;
          group_.push_back(slot);
        }
      }
      for (std::size_t g = 0; g < group_.size(); ++g) {
        const Active& a = active_[group_[g]];
        key_.push_back(a.cls);
        for (int64_t c = in_.class_cross_off[a.cls]; c < in_.class_cross_off[a.cls + 1]; ++c) {
          for (int slot : link_users_[in_.cross_link[c]]) {
            if (slot_seen_[slot] != epoch_) {
              slot_seen_[slot] = epoch_;
              group_.push_back(slot);
            }
          }
        }
      }
      std::sort(key_.begin(), key_.end());
      const std::vector<std::pair<int, double>>& found = rates_for(key_);
      for (int slot : group_) {
        double rate = lookup(found, active_[slot].cls);
        if (rate != active_[slot].rate) set_rate(slot, rate);
      }
    }
    dirty_list_.clear();
  }

  const std::vector<std::pair<int, double>>& rates_for(const std::vector<int>& key) {
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    if (memo_.size() >= MAX_RATE_MEMO) memo_.clear();
    std::vector<double> caps(key.size());
    for (std::size_t f = 0; f < key.size(); ++f) caps[f] = in_.class_cap[key[f]];
    collision_caps(key, caps);
    std::vector<double> rates = rates_shown(key, caps);
    std::vector<std::pair<int, double>> found;
    found.reserve(key.size());
    for (std::size_t f = 0; f < key.size(); ++f) found.emplace_back(key[f], rates[f]);
    return memo_.emplace(key, std::move(found)).first->second;
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
        double burst = in_.class_burst[cls] * in_.cross_load[c];
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
  // per flow its shared crossings then its private link L + f; bincount sums in crossing order.
  std::vector<double> rates_numpy(const std::vector<int>& classes, const std::vector<double>& caps,
                                  const std::vector<double>* duty) {
    const std::size_t flows = classes.size();
    const int L = in_.n_links;
    const std::size_t links = L + flows;
    std::vector<int> flow_of, link_of;
    std::vector<double> load;
    std::vector<double> remaining(in_.capacity, in_.capacity + L);
    for (std::size_t f = 0; f < flows; ++f) {
      int cls = classes[f];
      for (int64_t c = in_.class_cross_off[cls]; c < in_.class_cross_off[cls + 1]; ++c) {
        flow_of.push_back(static_cast<int>(f));
        link_of.push_back(in_.cross_link[c]);
        load.push_back(weighted(in_.cross_load[c], duty, f));
      }
      flow_of.push_back(static_cast<int>(f));
      link_of.push_back(L + static_cast<int>(f));
      load.push_back(1.0);
      remaining.push_back(caps[f]);
    }
    const std::size_t crossings = flow_of.size();
    std::vector<double> rate(flows, 0.0);
    std::vector<char> frozen(flows, 0), filling(flows, 1), active(crossings, 1), newly(flows, 0);
    std::vector<double> count(links), share(links), minus(links);
    while (true) {
      std::fill(count.begin(), count.end(), 0.0);
      for (std::size_t c = 0; c < crossings; ++c) {
        if (active[c] && filling[flow_of[c]]) count[link_of[c]] += 1.0 * load[c];
      }
      bool any = false;
      double level = INF;
      for (std::size_t l = 0; l < links; ++l) {
        if (count[l] > 0) {
          any = true;
          share[l] = remaining[l] / count[l];
        } else {
          share[l] = INF;
        }
        level = std::min(level, share[l]);
      }
      if (!any) break;
      std::fill(newly.begin(), newly.end(), 0);
      for (std::size_t c = 0; c < crossings; ++c) {
        if (active[c] && share[link_of[c]] <= level * (1.0 + TIE)) newly[flow_of[c]] = 1;
      }
      for (std::size_t f = 0; f < flows; ++f) {
        if (newly[f] && frozen[f]) newly[f] = 0;
      }
      for (std::size_t f = 0; f < flows; ++f) {
        if (newly[f] && filling[f]) rate[f] = 1.0 * level;
        if (newly[f]) {
          frozen[f] = 1;
          filling[f] = 0;
        }
      }
      std::fill(minus.begin(), minus.end(), 0.0);
      for (std::size_t c = 0; c < crossings; ++c) {
        if (active[c] && newly[flow_of[c]]) {
          minus[link_of[c]] += rate[flow_of[c]] * load[c];
          active[c] = 0;
        }
      }
      for (std::size_t l = 0; l < links; ++l) {
        remaining[l] -= minus[l];
        remaining[l] = std::max(remaining[l], 0.0);
      }
    }
    for (std::size_t f = 0; f < flows; ++f) {
      if (!frozen[f]) throw std::runtime_error("a flow crosses no link");
    }
    return rate;
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
    if (over_budget) {
      bool twice = true;
      for (const JobState& s : jobs_) {
        if (s.ends.size() < 2) twice = false;
      }
      if (twice) return true;
    }
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
  std::vector<Active> active_;
  std::unordered_map<std::vector<int>, std::vector<std::pair<int, double>>, VecHash> memo_;
  std::vector<char> dirty_link_;
  std::vector<int> dirty_list_;  // the links marked in dirty_link_, each once
  std::vector<std::vector<int>> link_users_;  // per shared link: slots of the active bundles crossing it
  // (its size is engine.py's `users`)
  std::vector<int> free_slots_;  // slots of drained bundles, reused last freed first
  std::vector<int64_t> versions_;  // per slot: the version of its live drain entry
  std::vector<Drain> drains_;
  std::vector<int> pending_;  // slots of the bundles started at this instant
  int active_count_ = 0;
  std::vector<int64_t> slot_seen_;  // per slot: the assign_rates call (epoch_) that last reached it
  int64_t epoch_ = 0;
  std::vector<int> group_, key_;
  int64_t seq_ = 0;
  int64_t events_ = 0;
  double now_ = 0.0;
  bool done_ = false;
  bool changed_ = false;
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
                const double* class_exposed, const double* class_shown, int n_links, const double* capacity,
                int64_t steps, const int32_t* windows,
                double tolerance, int64_t max_steps, int64_t max_events, int64_t event_budget,
                const double* alone_steps,
                const double* alone_comms) {
  Result* r = new Result();
  r->input = Input{n_jobs, job_node_off, node_seconds, node_comm, node_comm_seconds, node_dep_off, dep_idx,
                   node_bundle_off, bundle_work, bundle_class, n_classes, class_cap, class_cross_off, cross_link,
                   cross_load, class_job, class_burst, class_exposed, class_shown, n_links, capacity, steps, windows,
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
