package webshop

import "testing"

// fuzzCases were computed with Python 3.11's difflib through a transcription
// of thefuzz 0.19's token_set_ratio and ratio (full_process, round-half-even),
// i.e. WebShop's configuration without python-Levenshtein. The random
// strings of 250 and more characters exercise difflib's autojunk heuristic.
var fuzzCases = []struct {
	a, b            string
	tokenSet, ratio int
}{
	{"this is a test", "this is a test!", 100, 97},
	{"fuzzy wuzzy was a bear", "wuzzy fuzzy was a bear", 100, 91},
	{"fuzzy was a bear", "fuzzy fuzzy was a bear", 100, 84},
	{"pack of 2", "pack of 3", 89, 89},
	{"navy blue", "blue", 100, 62},
	{"gluten free", "gluten-free", 100, 91},
	{"long lasting", "long-lasting wear", 100, 76},
	{"sugar free", "gluten free", 57, 57},
	{"machine washable", "machine wash", 86, 86},
	{"non slip", "slip on", 93, 53},
	{"x-large", "xx-large", 93, 93},
	{"3.4 fl oz", "34 fl oz", 94, 94},
	{"Caf\u00e9 au lait", "cafe au lait", 96, 83},
	{"dairy free", "fragrance free", 58, 58},
	{"", "abc", 0, 0},
	{"  ", "a", 0, 0},
	{"high waist", "high waisted", 91, 91},
	{"easy to use", "easy use", 100, 84},
	{"snake_case word", "snake case word", 67, 93},
	{"16 ounce", "6 ounce", 93, 93},
	{"vitamin c", "vitamin e", 89, 89},
	{"organic", "non gmo", 29, 29},
	{"bpa free", "bpa-free plastic", 100, 58},
	{"rose gold", "gold", 100, 62},
	{"light pink", "pink", 100, 57},
	{"wireless charging", "fast charging", 76, 67},
	{"cbd a", "eaceaeb", 50, 33},
	{"aadda", "aedaeab  eae", 38, 35},
	{"edaba", "bcdbeaece baee bcae ae", 22, 30},
	{"aebd edcdedccbb baec", "dc dceaaedbcbdda aeecc cededaacd  aa", 44, 46},
	{"  c e dc d cadcbeada", "cb bdddabddecbdec dc dbbab", 41, 43},
	{"bb badebccabdeceecb ", "ee   ad eddddad dababdbaceaaaebeaceaabedb ccecd", 41, 30},
	{"aaddddcaba c cd beabecb eaec a cecbcbeeec bebbd bbedc aacdcb", "ecd ccababdbcbdeead c a ad bdbd ca ddd a bbbabed beed cbeebaa  ae bdbbacbcebeccedb", 36, 34},
	{"a cd eedebebeeadbeabbbde aeac eeedaeabbcaaedeaadceeeeb cdeed", "b ecebdbdaddca bdab cab   cbcbdb addb bb dedcdbcca cacedd adceeceaabaaccabcb", 12, 19},
	{"d cdbeeed caca bdaca acaebacadacedcebae babcabbc cebcde bcca", "aaa eebedbda  d dedec bbcb   bdcabaa  cdbaa de ceb cadbbcdacccecbacb", 45, 30},
	{"cbacdadce bbeaacabdeadacc baeeb  edc dbc e ba e d  ebeeea e    baaab caddea a e bdcada eea ea  dcacb bb  dddad cae  baebcc   ceebadadc a b dc ecdddaebcadacdaedcdbbaeab eccbe eca cbdddabad ddc bdcdcacaccdab a cccaddeacdcacaa c bbcdecbcda deeb aa ddeb ", "cdaebbddcccc   cd bcde dab babedebdcddbebbabceacbcceba ddd ebdccadcecb ee bacbdd ddcabad dedaadeddbabbbe a   daeaabbea  cb ce d aaaceebdcbeaaecdcc bdebebad  caabd  dacb dcbda c dc dbac eabdbcbbdbccaedebbdd aebdabaebda abdd c aabcbb e dac  dccdbaaacacdaebdccdaa dbcedbcc da db d", 8, 0},
	{"adadaacb aecccceac   ccca e aabad ddcddbdba c bebccdceaebdbbda adeecbdaaceabadd dbbbdde b e accceccc cbdbbbbbcebcadcbeeb a daaadbdcacbaabeebacebdec aa e ecbaccbabcae  bacd cbecabadedadad eb ea bd cdc cdac ecddac bd dbadbdaadecdbbaaeb daeec ebbccbebaa", "dbcbadcae da e b bedebdbebadebdcabb bae a cadede c dcebdd cdedbaaeddbdedbddaabcdcadee aa ba c eaaed baae  abbdcb  bacecbcecdbcedbeceebccabbdb c cdbcaea cdeee ace d ccdcebccadbbe acecc e c a abbce ddecabdbe aaaaeccaecebdecebbcedbbab bdaa b cdcaa ece edee dbbaaaea", 8, 0},
	{"dbbbaaaee bbdbee e  debecac a d eadd da  dbbacb aac  c ac e d ecc baeabcb bb cbdcebd   edde aad becbdeeaebbaaaaebcb aaab   a a aaecbe a dabbbaaa a  cdaba bcccdcaccca cceedce adadeacd aeeb aecbdaebcaacdad bdececebcb bdba ad ea ccadd ad acbccdeebd bdbe", " e acecebd e cbdd cebbcd  bebcc eb bb ceecbbcbc ab abdbbc cdcba acbddaadd be cdabce da bd ee  db     eb b addcc  adbd   bcdddaede  b caddaacebb becaedeb dea cecd db bdea ec accddaaadd   cecabc debddbbba bd e bbc  ddce bdcbc d cd bda ccb ccddde a cbcdaaecbec ea aba ccea", 12, 0},
	{"ebbbdcbbdebe ea e cbd bea d aeacdbbddeaddb dbdbee abcd ed cdcdd ab c  aaea  caeddbab d bca ccdeebcdcdceacccddcececb dacbc cbe aad edeeadcaaabde aeeedeb    e aba  d ba bada acbce ccbdacade eadeeaade ddaa dee bddeaa dbb adaa  aababdac ebd  bac   b ac e dd ca aaaa  eadcc ebdeacce dd bbac b ddddcecccae  ece abecedbdd debdc acccdbeacbebce dceaeeddb bcea dd bceaddeaecabdeececdeebbbbab cceecdebbadcac dab", "eacceeaaabedeebccdadeebcacbbdaaaaec ddae da acceb a edbdbcb bbaccaeaace   daabcab  ceed adcccdacddbdbb ad babbaec bdada adccbda cbcb ab debdbcddbbaceccbcdacddabea  bedcacbcdcbbadcdba cb adecebdaecbcdadbcebbbeb bbeaae dcbbbe   becbaa  ed aeccc daaddb cbbecab ceeacedeaac bc deaca ddeaeebababebbacceaaa  bcae edeb daca bacaddeecaaadbeebbb ed dba d deeeadaccdbc decdeaceb cbd  acaebacdbe abbddd aaa ec ec eaeacaea", 6, 0},
	{"dbacacc baaeecadeebdaebcdeccb a ecde eb dbe cdeceddcabcbbeededacbbcecdccbcaabeaecd aeddc aeb  bdc cb beecea  dc    bdaadeeaddebdceeadd dc cccdeeed ca dddcbecbdedebaccebcbdaaacedceceedee  dddcae cda aebadced eebbddddeec e abcccaceba c ced becebebdba eeace   a daac  eacdaea abbdeec eebebdeabbeeaaaabeddeda a ecb bccbac aeacbdedaabdeadaebbbabebcadcdecdab d  ebdcd dababbcdbacdecacedcd aadcebdbdccbdac a", "bb babcebeddbbccb dd ebcdebbd b cedecebdeebba eaec da  ebcad a bbcb aaececba cabcb dccdd  bcbac   cda   dbdc abcace b  adaebdbcbd aec  bebed ecd  ecaa caee ab aacbc ad  d ebceacddc e    dea  bd ebdba ecbeb becbabccdab cbb  d db bae db c cb beebc aedb  beddba cacdbaaccba cdabcddeccbeaaadda  c eca dddbecaca c e   c bab aadbccb e ba c ecdb ccbcbeccbaaae  dabddd bcee ab bbbd daaddbb caaeedbca ae dcada b bdcade ", 7, 0},
	{"cebdaecedde bdeeaa  ce ceedcd  bcce abb  d ab eceedcebeddcabbbe abc abe c dbedbee a eeead adbeee a  ead debbedabceadbacaa ebdca bdaebea cbc c  acabce ec daecaceceaa bccb daedaadaacbbec  dbece cdaacbdedaaabe  eddb ddbeeaccebcbeeabbc dceddccacedcbabdea b  bcdcaecceeeeb aeabd e accbb acc ce bce dca c cdecbbcbbba ddddecbeabc cc ee cabeaebcecdc d adcbcceab cb abaddbece abb abeaaaec babce a cabcc a dde ", "cbadaa ecdedcdaace cade  cbaabbbeaccdce eeb eecb ec da c e decceecbcaeda cb bdaaebaaeebebcec bb beac bddb cddbcaa  aa d cabeddd  bacac dbbcbcd ccdbebdcbccacadbbc eedbeab cadbdbc aababcbe cabd dadc   dcaebb  aabeebed a aacaaadbedabb eb  eeaecdacbb ac baccaabeadeccac a decec d  cddceddbdddb abeec e dbb aaea ad ec  de cdead  deceedb  dc adece  ca e beccd ceedebbaecebebcb bb db  acdcdadb cdacc eecd acdcd ad d beba bcde bececd", 7, 0},
}

func TestTokenSetRatioMatchesThefuzz(t *testing.T) {
	for _, c := range fuzzCases {
		if got := TokenSetRatio(c.a, c.b); got != c.tokenSet {
			t.Errorf("TokenSetRatio(%q, %q) = %d, want %d", c.a, c.b, got, c.tokenSet)
		}
		if got := Ratio(c.a, c.b); got != c.ratio {
			t.Errorf("Ratio(%q, %q) = %d, want %d", c.a, c.b, got, c.ratio)
		}
	}
}

// TestFuzzyDocExamples checks the examples of fuzzywuzzy's README.
func TestFuzzyDocExamples(t *testing.T) {
	if got := Ratio("this is a test", "this is a test!"); got != 97 {
		t.Errorf("ratio = %d, want 97", got)
	}
	if got := Ratio("fuzzy wuzzy was a bear", "wuzzy fuzzy was a bear"); got != 91 {
		t.Errorf("ratio = %d, want 91", got)
	}
	if got := TokenSetRatio("fuzzy was a bear", "fuzzy fuzzy was a bear"); got != 100 {
		t.Errorf("token_set_ratio = %d, want 100", got)
	}
}

// TestTokenSetRatioBounded: scores lie in [0, 100]. They are not symmetric
// (difflib's matching blocks depend on which string is indexed), which is
// why reward.go passes arguments in WebShop's order.
func TestTokenSetRatioBounded(t *testing.T) {
	asymmetric := false
	for _, c := range fuzzCases {
		x, y := TokenSetRatio(c.a, c.b), TokenSetRatio(c.b, c.a)
		if x < 0 || x > 100 || y < 0 || y > 100 {
			t.Errorf("TokenSetRatio(%q, %q) = %d, reversed %d", c.a, c.b, x, y)
		}
		asymmetric = asymmetric || x != y
	}
	if !asymmetric {
		t.Error("no asymmetric case: difflib's asymmetry is not reproduced")
	}
}
