// What a job started on this machine reads, for loom-rules explain and show: loom's parameters
// as Open MPI hands them to a job started from this environment - the OMPI_MCA_* variables and
// Open MPI's parameter files (PREFIX/etc/openmpi-mca-params.conf, ~/.openmpi/mca-params.conf,
// mca_base_param_files) - read through Open MPI's own reader, `ompi_info --parsable --param
// coll loom --level 9`, so that nothing here second-guesses its precedence; and the rule files
// they name, loaded into their layers as the plugin loads them (coll_component/
// coll_loom_component.c): the user's (coll_loom_rules), then the site's (coll_loom_site_rules;
// its default path only where a file is there; "none" or empty: none). Parameters given on
// mpirun's command line (--mca) are not in this environment: give them to loom-rules as options.
#include "loom_rules.hpp"

#include "selection.hpp"

#include <cstdio>
#include <memory>
#include <sys/stat.h>

namespace loom::rules_tool {

namespace {

// ompi_info's lines "mca:coll:loom:param:NAME:value:VALUE" and "...:NAME:source:SOURCE".
std::map<std::string, JobParam> ompi_info_params(const std::string& ompi_info)
{
    std::map<std::string, JobParam> params;
    const std::string command = "'" + ompi_info + "' --parsable --param coll loom --level 9 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    if (!pipe) return params;
    std::string line;
    char buf[4096];
    constexpr std::string_view kPrefix = "mca:coll:loom:param:";
    while (std::fgets(buf, sizeof buf, pipe.get()) != nullptr) {
        line += buf;
        if (line.empty() || line.back() != '\n') continue; // a line longer than the buffer
        line.pop_back();
        if (line.rfind(kPrefix, 0) == 0) {
            const std::string rest = line.substr(kPrefix.size());
            const std::size_t name_end = rest.find(':');
            const std::size_t key_end = name_end == std::string::npos ? name_end : rest.find(':', name_end + 1);
            if (key_end != std::string::npos) {
                const std::string name = rest.substr(0, name_end);
                const std::string key = rest.substr(name_end + 1, key_end - name_end - 1);
                if (key == "value") params[name].value = rest.substr(key_end + 1);
                if (key == "source") params[name].source = rest.substr(key_end + 1);
            }
        }
        line.clear();
    }
    return params;
}

bool exists(const std::string& path)
{
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

} // namespace

std::string JobSettings::value(const std::string& name) const
{
    const auto it = params.find(name);
    return it == params.end() ? std::string() : it->second.value;
}

std::string JobSettings::describe(const std::string& name) const
{
    const auto it = params.find(name);
    return it == params.end() ? std::string("not set")
                              : name + ", " + (it->second.source.empty() ? "default" : it->second.source);
}

JobSettings read_job_settings(const Args& a)
{
    JobSettings job;
    if (a.flags.count("--no-job") == 0) {
        job.params = ompi_info_params(LOOM_OMPI_INFO);
        job.read = true;
        job.found = job.params.count("coll_loom_site_rules") != 0 || job.params.count("coll_loom_rules") != 0;
    }

    // The user's file: --rules, else the job's coll_loom_rules.
    if (const std::string* f = a.get("--rules")) {
        job.user = *f;
        job.user_from = "--rules";
    } else if (job.found && !job.value("coll_loom_rules").empty()) {
        job.user = job.value("coll_loom_rules");
        job.user_from = job.describe("coll_loom_rules");
    }
    if (job.user == "none") job.user.clear();

    // The site's: --site-rules, else the job's coll_loom_site_rules (its default path only where
    // a file is there), else, where no loom answers ompi_info, this installation's path.
    std::string site;
    bool site_default = false;
    if (const std::string* f = a.get("--site-rules")) {
        site = *f;
        job.site_from = "--site-rules";
    } else if (job.found) {
        site = job.value("coll_loom_site_rules");
        const auto it = job.params.find("coll_loom_site_rules");
        site_default = it != job.params.end() && (it->second.source.empty() || it->second.source == "default");
        job.site_from = job.describe("coll_loom_site_rules");
    } else if (a.flags.count("--no-job") == 0) {
        site = LOOM_SITE_RULES;
        site_default = true;
        job.site_from = "this installation's site file";
    }
    if (site == "none" || (site_default && !exists(site))) site.clear();
    job.site = site;
    if (site.empty() && site_default) job.site_from += ", no file there";

    // The parameters decide() and its options read.
    if (job.found) {
        for (const auto& [name, p] : job.params) {
            const bool forced = name.size() > 10 && name.compare(name.size() - 10, 10, "_algorithm") == 0;
            if (forced && !p.value.empty()) job.forced[name.substr(10, name.size() - 20)] = name;
        }
    }
    return job;
}

std::vector<rules::Diagnostic> load_job_layers(const JobSettings& job)
{
    std::vector<rules::Diagnostic> all = rules::load_user_rules(job.user);
    const auto site = rules::load_site_rules(job.site);
    all.insert(all.end(), site.begin(), site.end());
    return all;
}

void print_job_reads(const JobSettings& job, std::FILE* to)
{
    if (job.read && !job.found)
        std::fprintf(stderr,
                     "loom-rules: ompi_info (%s) lists no coll loom component: a job started here would not load "
                     "loom (it is not where this Open MPI looks: docs/install.md); deciding with the files given and "
                     "loom's built-in rules\n",
                     LOOM_OMPI_INFO);
    std::fprintf(to, "what a job reads (%s):\n",
                 job.found   ? "Open MPI's settings for loom from this environment and its parameter files, as "
                               "ompi_info reads them"
                 : job.read ? "no loom answers ompi_info: the options given, and this installation's site file"
                            : "--no-job: the options given");
    std::fprintf(to, "  user rules: %s%s\n", job.user.empty() ? "none" : job.user.c_str(),
                 job.user_from.empty() ? "" : (" (" + job.user_from + ")").c_str());
    std::fprintf(to, "  site rules: %s%s\n", job.site.empty() ? "none" : job.site.c_str(),
                 job.site_from.empty() ? "" : (" (" + job.site_from + ")").c_str());
    for (const auto& [coll, name] : job.forced)
        std::fprintf(to, "  forced %s: %s (%s)\n", coll.c_str(), job.value(name).c_str(), job.describe(name).c_str());
}

} // namespace loom::rules_tool
