package chattemplate

import (
	"fmt"
	"time"
)

var (
	weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	months   = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
)

// strftimeDirectives format the directives of Python's strftime in the C
// locale, by their letter.
var strftimeDirectives = map[byte]func(t time.Time) string{
	'%': func(time.Time) string { return "%" },
	'A': func(t time.Time) string { return weekdays[t.Weekday()] },
	'B': func(t time.Time) string { return months[t.Month()-1] },
	'D': func(t time.Time) string { return fmt.Sprintf("%02d/%02d/%02d", int(t.Month()), t.Day(), t.Year()%100) },
	'F': func(t time.Time) string { return fmt.Sprintf("%d-%02d-%02d", t.Year(), int(t.Month()), t.Day()) },
	'H': func(t time.Time) string { return fmt.Sprintf("%02d", t.Hour()) },
	'I': func(t time.Time) string { return fmt.Sprintf("%02d", (t.Hour()+11)%12+1) },
	'M': func(t time.Time) string { return fmt.Sprintf("%02d", t.Minute()) },
	'R': func(t time.Time) string { return fmt.Sprintf("%02d:%02d", t.Hour(), t.Minute()) },
	'S': func(t time.Time) string { return fmt.Sprintf("%02d", t.Second()) },
	'T': func(t time.Time) string { return fmt.Sprintf("%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second()) },
	'X': func(t time.Time) string { return fmt.Sprintf("%02d:%02d:%02d", t.Hour(), t.Minute(), t.Second()) },
	'Y': func(t time.Time) string { return fmt.Sprintf("%d", t.Year()) },
	'Z': func(t time.Time) string { name, _ := t.Zone(); return name },
	'a': func(t time.Time) string { return weekdays[t.Weekday()][:3] },
	'b': func(t time.Time) string { return months[t.Month()-1][:3] },
	'c': func(t time.Time) string {
		return fmt.Sprintf("%s %s %2d %02d:%02d:%02d %d", weekdays[t.Weekday()][:3], months[t.Month()-1][:3], t.Day(), t.Hour(), t.Minute(), t.Second(), t.Year())
	},
	'd': func(t time.Time) string { return fmt.Sprintf("%02d", t.Day()) },
	'e': func(t time.Time) string { return fmt.Sprintf("%2d", t.Day()) },
	'f': func(t time.Time) string { return fmt.Sprintf("%06d", t.Nanosecond()/1000) },
	'h': func(t time.Time) string { return months[t.Month()-1][:3] },
	'j': func(t time.Time) string { return fmt.Sprintf("%03d", t.YearDay()) },
	'm': func(t time.Time) string { return fmt.Sprintf("%02d", int(t.Month())) },
	'n': func(time.Time) string { return "\n" },
	'p': ampm,
	't': func(time.Time) string { return "\t" },
	'u': func(t time.Time) string { return fmt.Sprintf("%d", (int(t.Weekday())+6)%7+1) },
	'w': func(t time.Time) string { return fmt.Sprintf("%d", int(t.Weekday())) },
	'x': func(t time.Time) string { return fmt.Sprintf("%02d/%02d/%02d", int(t.Month()), t.Day(), t.Year()%100) },
	'y': func(t time.Time) string { return fmt.Sprintf("%02d", t.Year()%100) },
	'z': utcOffset,
}

// strftime formats t as Python's datetime.strftime does in the C locale,
// within the budget bud (nil: none); unknown directives are kept as they
// are.
func strftime(bud *budget, t time.Time, f string) (string, error) {
	if err := bud.workFor("strftime_now", int64(len(f))); err != nil {
		return "", err
	}
	b := newSbuf(bud, "strftime_now")
	for i := 0; i < len(f) && !b.done; i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.writeByte(f[i])
			continue
		}
		i++
		if d, ok := strftimeDirectives[f[i]]; ok {
			b.WriteString(d(t))
		} else {
			b.writeByte('%')
			b.writeByte(f[i])
		}
	}
	return b.result()
}

func ampm(t time.Time) string {
	if t.Hour() < 12 {
		return "AM"
	}
	return "PM"
}

// utcOffset is %z: +HHMM or -HHMM.
func utcOffset(t time.Time) string {
	_, off := t.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%c%02d%02d", sign, off/3600, off%3600/60)
}
