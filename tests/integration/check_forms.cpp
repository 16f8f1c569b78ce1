#include "check_forms.hpp"

namespace check {

Form form = Form::blocking;

std::string form_name(const char* collective)
{
    if (form == Form::nonblocking) return std::string("i") + collective;
    if (form == Form::persistent) return std::string(collective) + "_init";
    return collective;
}

} // namespace check
