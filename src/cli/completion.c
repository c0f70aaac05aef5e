/* osb completion bash|zsh: shell completion of groups, commands and
 * options (sandbox ids are completed from `osb sandbox list -o raw`). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char bash_script[] =
    "# osb completion for bash: source <(osb completion bash)\n"
    "_osb() {\n"
    "    local cur=${COMP_WORDS[COMP_CWORD]} i group='' sub=''\n"
    "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
    "        case ${COMP_WORDS[i]} in -*) ;; *)\n"
    "            if [ -z \"$group\" ]; then group=${COMP_WORDS[i]}\n"
    "            elif [ -z \"$sub\" ]; then sub=${COMP_WORDS[i]}; fi ;;\n"
    "        esac\n"
    "    done\n"
    "    local words\n"
    "    case $group in\n"
    "    '') words='sandbox command exec shell code file snapshot pool batch image egress "
    "diagnostics config completion --help --version' ;;\n"
    "    sandbox) words='create list get kill pause resume renew endpoint health metrics' ;;\n"
    "    command) words='run status logs interrupt session' ;;\n"
    "    file) words='cat write upload download rm mv mkdir rmdir search info chmod replace' ;;\n"
    "    snapshot) words='create list get rm' ;;\n"
    "    pool) words='create list get resize rm' ;;\n"
    "    image) words='pull list rm' ;;\n"
    "    egress) words='get patch' ;;\n"
    "    diagnostics) words='logs events' ;;\n"
    "    config) words='init show set' ;;\n"
    "    code) words='run context' ;;\n"
    "    completion) words='bash zsh' ;;\n"
    "    esac\n"
    "    if [ -n \"$group\" ] && { [ -n \"$sub\" ] || [ \"$group\" = exec ] || "
    "[ \"$group\" = shell ]; }; then\n"
    "        words=$(osb sandbox list -o raw 2>/dev/null | tr ',' '\\n' | "
    "sed -n 's/.*\"id\":\"\\([^\"]*\\)\".*/\\1/p')\n"
    "    fi\n"
    "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    "}\n"
    "complete -o default -F _osb osb\n";

static const char zsh_script[] = "#compdef osb\n"
                                 "# osb completion for zsh: source <(osb completion zsh)\n"
                                 "autoload -U +X bashcompinit && bashcompinit\n";

int cli_cmd_completion(struct cli *cli, int argc, char **argv)
{
    (void)cli;
    if (argc != 1 || (strcmp(argv[0], "bash") && strcmp(argv[0], "zsh")))
        return cli_usage("usage: osb completion bash|zsh");
    if (!strcmp(argv[0], "zsh"))
        fputs(zsh_script, stdout);
    fputs(bash_script, stdout);
    return CLI_OK;
}
