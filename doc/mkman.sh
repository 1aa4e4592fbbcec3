#!/bin/sh
# mkman.sh TOOL VERSION "OTHER TOOLS..." > TOOL.1
#
# A tool's man page, made from its --help, so that the two never differ.
# The help is read as sysmeasure's tools write it:
#   Usage: TOOL ...            the SYNOPSIS (with lines below it that
#          TOOL ...            start with spaces and the tool's name)
#   A paragraph.               the DESCRIPTION; its first sentence is the
#                              NAME line
#   Options:                   a heading: OPTIONS, EXAMPLES, ... (a heading
#                              other than Options/Examples/Environment/Exit
#                              status/Files is a subsection)
#     -x, --long VALUE  Text   an option or operand (text after two spaces
#                      more    or on the lines below, indented further)
#     command                  in Examples: a command, and below it
#         what it does         (indented further) what it does
# Everything else is text.  The other tools are the SEE ALSO list.
set -u
tool=$1
version=$2
others=${3:-}
name=$(basename "$tool")
help=$("$tool" --help 2>&1) || { echo "mkman.sh: '$tool --help' failed" >&2; exit 1; }
[ -n "$help" ] || { echo "mkman.sh: '$tool --help' printed nothing" >&2; exit 1; }
printf '%s\n' "$help" | awk -v name="$name" -v version="$version" -v others="$others" '
function esc(s,   out) {
    gsub(/\\/, "\\e", s)
    return s
}
# Bold text: hyphens as \- so that a copied option works.
function code(s) {
    s = esc(s)
    gsub(/-/, "\\-", s)
    return "\\fB\\%" s "\\fR"
}
function text(s) {
    s = esc(s)
    if (s ~ /^[.'\'']/)
        s = "\\&" s
    return s
}
function indent(s) { match(s, /^ */); return RLENGTH }
function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
{ line[++n] = $0 }
END {
    i = 1
    while (i <= n && line[i] ~ /^ *$/) i++
    synopsis = ""
    if (line[i] ~ /^[Uu]sage: /) {
        s = line[i]; sub(/^[Uu]sage: +/, "", s); synopsis = s; i++
        while (i <= n && line[i] ~ "^ +" name "( |$)") {
            synopsis = synopsis "\n" trim(line[i]); i++
        }
    }
    while (i <= n && line[i] ~ /^ *$/) i++
    # The description: up to a blank line, a heading or an option.
    desc = ""
    while (i <= n && line[i] !~ /^ *$/ && line[i] !~ /^[A-Z][^ ]*( [^ ]+)*:$/ && line[i] !~ /^ +-/) {
        desc = desc (desc == "" ? "" : " ") trim(line[i]); i++
    }
    summary = desc
    if (match(summary, /\. /)) summary = substr(summary, 1, RSTART - 1)
    sub(/\.$/, "", summary)
    # A NAME line is short: a long sentence up to its first comma or aside.
    if (length(summary) > 60 && match(summary, /(, | \()/)) summary = substr(summary, 1, RSTART - 1)
    first = substr(summary, 1, 1); rest = substr(summary, 2)
    summary = tolower(first) rest
    print ".\\\" Made by doc/mkman.sh from \"" name " --help\": do not edit."
    print ".TH " toupper(name) " 1 \"\" \"sysmeasure " version "\" \"User Commands\""
    print ".SH NAME"
    print text(name) " \\- " text(summary)
    if (synopsis != "") {
        print ".SH SYNOPSIS"
        print ".nf"
        k = split(synopsis, syn, "\n")
        for (j = 1; j <= k; j++)
            print code(syn[j])
        print ".fi"
    }
    print ".SH DESCRIPTION"
    if (desc != "") print text(desc)
    section = "DESCRIPTION"; para = 1; opt = 0
    for (; i <= n; i++) {
        l = line[i]
        if (l ~ /^ *$/) { para = 1; opt = 0; continue }
        if (l ~ /^[A-Z][^ ]*( [^ ]+)*:$/) {
            h = substr(l, 1, length(l) - 1)
            if (h ~ /^(Options|Examples|Environment|Exit status|Files)$/) {
                section = toupper(h); print ".SH " section
            } else {
                print ".SS " text(h)
            }
            para = 0; opt = 0; continue
        }
        ind = indent(l)
        if (section == "EXAMPLES" && ind == 2) {
            print ".TP"; print code(trim(l)); opt = 1; optind = ind; para = 0; continue
        }
        if (ind >= 1 && ind <= 6 && (substr(trim(l), 1, 1) == "-" || trim(l) ~ /[^ ]  +[^ ]/)) {
            t = trim(l)
            if (match(t, /  +/)) {
                label = substr(t, 1, RSTART - 1); rest = trim(substr(t, RSTART))
            } else {
                label = t; rest = ""
            }
            print ".TP"; print code(label)
            if (rest != "") print text(rest)
            opt = 1; optind = ind; para = 0; continue
        }
        if (opt && ind > optind) { print text(trim(l)); continue }
        if (para) { print ".PP"; para = 0 }
        opt = 0
        print text(trim(l))
    }
    k = split(others, o, " ")
    if (k) {
        print ".SH SEE ALSO"
        for (j = 1; j <= k; j++)
            if (o[j] != name) {
                printf "%s%s(1)", (seen++ ? ",\n" : ""), code(o[j])
            }
        print ""
    }
}'
