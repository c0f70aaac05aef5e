/* osb completion bash|zsh: shell completion of groups, commands and
 * sandbox ids (these from `osb sandbox list -o raw` when completion asks).
 * Both scripts are written from one table of groups and commands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
    const char *group, *commands; /* commands: NULL for a group without them */
} table[] = {
    {"sandbox", "create list get kill pause resume renew endpoint health metrics"},
    {"command", "run status logs interrupt session"},
    {"exec", NULL},
    {"shell", NULL},
    {"code", "run context"},
    {"file", "cat write upload download rm mv mkdir rmdir search info chmod replace"},
    {"snapshot", "create list get rm"},
    {"pool", "create list get resize rm"},
    {"batch", NULL},
    {"image", "pull list rm"},
    {"egress", "get patch"},
    {"desktop",
     "screenshot move click double-click drag scroll type key cursor windows focus open"},
    {"credential-vault", "create get patch delete credential binding"},
    {"diagnostics", "logs events"},
    {"config", "init show set"},
    {"completion", "bash zsh"},
};
#define N_GROUPS (sizeof table / sizeof *table)

/* The ids of the sandboxes, one a line (no jq needed). */
static const char ids_pipeline[] =
    "osb sandbox list -o raw --page-size 200 2>/dev/null | tr ',' '\\n' | "
    "sed -n 's/.*\"id\":\"\\([^\"]*\\)\".*/\\1/p'";

static void groups_line(void)
{
    for (size_t i = 0; i < N_GROUPS; i++)
        printf("%s%s", i ? " " : "", table[i].group);
}

/* Completion takes ids after these groups' command (or right after
 * exec/shell); config and completion take none. */
static void bash_script(void)
{
    puts("# osb completion for bash: source <(osb completion bash)\n"
         "_osb() {\n"
         "    local cur=${COMP_WORDS[COMP_CWORD]} i group='' sub='' words=''\n"
         "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "        case ${COMP_WORDS[i]} in -*) ;; *)\n"
         "            if [ -z \"$group\" ]; then group=${COMP_WORDS[i]}\n"
         "            elif [ -z \"$sub\" ]; then sub=${COMP_WORDS[i]}; fi ;;\n"
         "        esac\n"
         "    done\n"
         "    case $group in");
    fputs("    '') words='", stdout);
    groups_line();
    puts(" --help --version' ;;");
    for (size_t i = 0; i < N_GROUPS; i++)
        if (table[i].commands)
            printf("    %s) [ -z \"$sub\" ] && words='%s' ;;\n", table[i].group, table[i].commands);
    printf("    esac\n"
           "    case $group in config|completion|'') ;; *)\n"
           "        if [ -z \"$words\" ] && [[ $cur != -* ]]; then\n"
           "            words=$(%s)\n"
           "        fi ;;\n"
           "    esac\n"
           "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
           "}\n"
           "complete -o default -F _osb osb\n",
           ids_pipeline);
}

static void zsh_script(void)
{
    puts("#compdef osb\n"
         "# osb completion for zsh: source <(osb completion zsh), or save it as _osb\n"
         "# in a directory of $fpath\n"
         "_osb() {\n"
         "    local w group='' sub=''\n"
         "    local -a cands\n"
         "    for w in ${words[2,CURRENT-1]}; do\n"
         "        [[ $w == -* ]] && continue\n"
         "        if [[ -z $group ]]; then group=$w\n"
         "        elif [[ -z $sub ]]; then sub=$w; fi\n"
         "    done\n"
         "    case $group in");
    fputs("    '') cands=(", stdout);
    groups_line();
    puts(") ;;");
    for (size_t i = 0; i < N_GROUPS; i++)
        if (table[i].commands)
            printf("    %s) [[ -z $sub ]] && cands=(%s) ;;\n", table[i].group, table[i].commands);
    printf("    esac\n"
           "    if (( ! ${#cands} )) && [[ $group != (config|completion) ]] && "
           "[[ $PREFIX != -* ]]; then\n"
           "        cands=(${(f)\"$(%s)\"})\n"
           "    fi\n"
           "    if (( ${#cands} )); then\n"
           "        compadd -a cands\n"
           "    else\n"
           "        _files\n"
           "    fi\n"
           "}\n"
           "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
           "    _osb \"$@\"\n"
           "else\n"
           "    compdef _osb osb\n"
           "fi\n",
           ids_pipeline);
}

int cli_cmd_completion(struct cli *cli, int argc, char **argv)
{
    (void)cli;
    if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        puts("usage: osb completion bash|zsh\n"
             "  bash: source <(osb completion bash)   (in ~/.bashrc)\n"
             "  zsh:  source <(osb completion zsh)    (in ~/.zshrc, after compinit)");
        return CLI_OK;
    }
    if (argc != 1 || (strcmp(argv[0], "bash") && strcmp(argv[0], "zsh")))
        return cli_usage("usage: osb completion bash|zsh");
    if (!strcmp(argv[0], "zsh"))
        zsh_script();
    else
        bash_script();
    return CLI_OK;
}
