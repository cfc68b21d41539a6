/^ *[0-9,]+ \(/ && !/PROGRAM TOTALS/ {
  line = $0
  sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", line)
  sub(/ \[.*\]$/, "", line)
  sub(/'[0-9]+$/, "", line)
  n = $1; gsub(",", "", n); s[line] += n
}
END { for (k in s) print s[k] "\t" k }
