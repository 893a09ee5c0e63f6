// A tool that is an external command: each call starts `/bin/sh -c COMMAND` in its own process group,
// writes the call's arguments as one JSON object on its stdin (then closes it) and takes what it writes on
// stdout as the tool's text. Exit status 0 is success; a non-zero exit or a death by signal is failure
// Crashed (the text quotes the last line of its stderr); running past the timeout is Timeout, writing more
// than the output cap is OutputTooLong: in every case the whole process group is killed and the child
// reaped before the call returns, so nothing is left running and no zombie stays.
#pragma once
#include <memory>
#include <string>

#include "tools/tool_set.h"

namespace grpo::tools {

std::shared_ptr<Tool> make_command_tool(std::string name, std::string command);

}  // namespace grpo::tools
