package webshop

// This file is the vocabulary the synthetic catalogue is drawn from: five
// top-level categories shaped like WebShop's (beauty, grocery, fashion,
// electronics, home and garden), their sub-categories and product types
// (WebShop's search "query" types), attribute phrases of the kind WebShop
// mined from real listings, option groups, brands and phrasing material.
// Nothing here is random; catalog.go draws from it with a seeded stream.

// categorySpec is one top-level department.
type categorySpec struct {
	name       string // first level of the '›' category path
	brands     []string
	adjectives []string // title adjectives
	uses       []string // "made for ..." phrases in descriptions
	subs       []subcategorySpec
}

// subcategorySpec is the second level of the category path. Attributes are
// defined here rather than per department so that a t-shirt is never "non
// slip" and a frying pan never "machine washable".
type subcategorySpec struct {
	name  string
	attrs []string
	types []typeSpec
}

// typeSpec is one product type, WebShop's search "query" (313 of them in
// the real data). label is the title form; nouns stands in for the spaCy
// NOUN/PROPN tokens WebShop's type reward compares (see reward.go); groups
// names the option pools (optionPools keys) its products offer.
type typeSpec struct {
	// attrs, when set, replaces the sub-category's attribute pool for
	// types it does not fit (a hair dryer is not "sulfate free").
	attrs  []string
	query  string
	label  string
	leaf   string // third level of the category path
	nouns  []string
	groups []string
	price  [2]float64 // typical single-price range
}

// optionPool is one option group: the name shown on the item page and the
// values a product draws a subset of (kept in this order on the page).
type optionPool struct {
	name   string
	values []string
}

var optionPools = map[string]optionPool{
	"size:clothing":  {"size", []string{"x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large"}},
	"size:shoe":      {"size", []string{"6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12"}},
	"size:volume":    {"size", []string{"1 fl oz", "1.7 fl oz", "3.4 fl oz", "6.7 fl oz", "8 fl oz", "16 fl oz", "33.8 fl oz"}},
	"size:weight":    {"size", []string{"1.5 ounce", "2.5 ounce", "5 ounce", "8 ounce", "12 ounce", "16 ounce", "2 pound"}},
	"size:bed":       {"size", []string{"twin", "twin xl", "full", "queen", "king", "california king"}},
	"size:pan":       {"size", []string{"8 inch", "9.5 inch", "10 inch", "11 inch", "12 inch", "14 inch"}},
	"size:length":    {"size", []string{"3 ft", "6 ft", "10 ft", "15 ft", "25 ft", "50 ft", "100 ft"}},
	"size:screen":    {"size", []string{"32 inch", "43 inch", "55 inch", "65 inch", "75 inch"}},
	"size:phone":     {"size", []string{"iphone 13", "iphone 14", "iphone 15", "galaxy s23", "galaxy s24", "pixel 8"}},
	"size:furniture": {"size", []string{"24 inch", "26 inch", "30 inch", "small", "medium", "large"}},
	"color:apparel":  {"color", []string{"black", "white", "navy blue", "heather gray", "olive green", "burgundy", "khaki", "royal blue", "light pink", "beige", "charcoal", "dark brown"}},
	"color:makeup":   {"color", []string{"nude", "ruby red", "rose", "coral", "berry", "mauve", "cocoa", "champagne", "peach", "plum"}},
	"color:tech":     {"color", []string{"black", "white", "silver", "space gray", "midnight blue", "rose gold", "sage green", "lavender"}},
	"color:home":     {"color", []string{"white", "light gray", "dark gray", "beige", "navy", "sage green", "black", "walnut", "natural", "ivory", "terracotta"}},
	"flavor:snack":   {"flavor", []string{"original", "sea salt", "barbecue", "dark chocolate", "honey roasted", "salted caramel", "cinnamon", "mixed berry", "jalapeno", "maple"}},
	"flavor:drink":   {"flavor", []string{"original", "lemon", "peach", "mango", "raspberry", "mint", "vanilla", "hazelnut", "caramel", "unsweetened"}},
	"scent":          {"scent", []string{"lavender", "coconut", "unscented", "citrus", "vanilla", "rose", "eucalyptus", "sandalwood", "green tea"}},
	"count:pack":     {"count", []string{"pack of 1", "pack of 2", "pack of 3", "pack of 4", "pack of 6", "pack of 12"}},
	"count:set":      {"count", []string{"set of 1", "set of 2", "set of 4", "set of 6"}},
	"style:tech":     {"style", []string{"standard", "pro", "plus", "mini", "max"}},
	"style:home":     {"style", []string{"modern", "farmhouse", "industrial", "mid century", "classic", "bohemian"}},
	"style:cut":      {"style", []string{"regular", "slim", "relaxed", "athletic"}},
}

var categories = []categorySpec{
	{
		name:       "Beauty & Personal Care",
		brands:     []string{"Lumiere", "Petal & Pine", "Aveline", "Glowra", "Sol Naturals", "Velvetine", "Dermaly", "Bloomwell", "Oro Botanica", "Clearwave"},
		adjectives: []string{"Nourishing", "Hydrating", "Gentle", "Luxury", "Daily", "Professional", "Natural", "Soothing", "Revitalizing", "Lightweight"},
		uses:       []string{"daily self care", "all skin types", "a salon finish at home", "morning and evening routines", "travel and gym bags"},
		subs: []subcategorySpec{
			{
				name:  "Hair Care",
				attrs: []string{"sulfate free", "paraben free", "cruelty free", "dry hair", "color safe", "natural ingredients", "argan oil", "travel size", "hair growth", "easy to use"},
				types: []typeSpec{
					{query: "shampoo", label: "Shampoo", leaf: "Shampoos", nouns: []string{"shampoo"}, groups: []string{"size:volume", "scent"}, price: [2]float64{6, 32}},
					{query: "conditioner", label: "Conditioner", leaf: "Conditioners", nouns: []string{"conditioner"}, groups: []string{"size:volume", "scent"}, price: [2]float64{6, 30}},
					{query: "hair oil", label: "Hair Oil", leaf: "Hair Oils", nouns: []string{"hair", "oil"}, groups: []string{"size:volume"}, price: [2]float64{8, 38}},
					{query: "hair dryer", attrs: []string{"ionic technology", "fast drying", "lightweight", "low noise", "cool shot button", "foldable handle", "diffuser attachment", "easy to use"}, label: "Hair Dryer", leaf: "Hair Dryers", nouns: []string{"hair", "dryer"}, groups: []string{"color:tech"}, price: [2]float64{25, 140}},
				},
			},
			{
				name:  "Skin Care",
				attrs: []string{"fragrance free", "sensitive skin", "anti aging", "hyaluronic acid", "vitamin c", "oil free", "dermatologist tested", "long lasting", "dry skin", "non comedogenic", "cruelty free", "paraben free"},
				types: []typeSpec{
					{query: "face moisturizer", label: "Face Moisturizer", leaf: "Moisturizers", nouns: []string{"face", "moisturizer"}, groups: []string{"size:volume", "count:pack"}, price: [2]float64{9, 55}},
					{query: "body lotion", label: "Body Lotion", leaf: "Body Lotions", nouns: []string{"body", "lotion"}, groups: []string{"size:volume", "scent"}, price: [2]float64{6, 28}},
					{query: "sunscreen", label: "Sunscreen SPF 50", leaf: "Sunscreens", nouns: []string{"sunscreen", "spf"}, groups: []string{"size:volume", "count:pack"}, price: [2]float64{8, 30}},
					{query: "face serum", label: "Face Serum", leaf: "Serums", nouns: []string{"face", "serum"}, groups: []string{"size:volume"}, price: [2]float64{12, 70}},
					{query: "facial cleanser", label: "Facial Cleanser", leaf: "Cleansers", nouns: []string{"cleanser"}, groups: []string{"size:volume", "count:pack"}, price: [2]float64{7, 32}},
				},
			},
			{
				name:  "Makeup",
				attrs: []string{"long lasting", "waterproof", "cruelty free", "paraben free", "highly pigmented", "smudge proof", "easy to apply", "natural look", "vegan", "sensitive skin"},
				types: []typeSpec{
					{query: "lipstick", label: "Matte Lipstick", leaf: "Lipstick", nouns: []string{"lipstick"}, groups: []string{"color:makeup"}, price: [2]float64{5, 26}},
					{query: "eyeshadow palette", label: "Eyeshadow Palette", leaf: "Eyeshadow", nouns: []string{"eyeshadow", "palette"}, groups: []string{"color:makeup"}, price: [2]float64{8, 48}},
					{query: "liquid foundation", label: "Liquid Foundation", leaf: "Foundation", nouns: []string{"foundation"}, groups: []string{"color:makeup", "size:volume"}, price: [2]float64{9, 45}},
					{query: "mascara", label: "Volumizing Mascara", leaf: "Mascara", nouns: []string{"mascara"}, groups: []string{"color:makeup", "count:pack"}, price: [2]float64{5, 28}},
				},
			},
		},
	},
	{
		name:       "Grocery & Gourmet Food",
		brands:     []string{"Harvest Hill", "Golden Acre", "NutriBay", "Crunchwell", "Maple Ridge", "Sunny Orchard", "Wildgrain", "Kettle & Co", "Prairie Kitchen", "Blue Heron"},
		adjectives: []string{"Premium", "Gourmet", "Classic", "Crunchy", "Wholesome", "Artisan", "Family Size", "Healthy", "Small Batch", "Authentic"},
		uses:       []string{"snacking on the go", "family meals", "lunch boxes and road trips", "a healthy pantry", "entertaining guests"},
		subs: []subcategorySpec{
			{
				name:  "Snacks",
				attrs: []string{"gluten free", "high protein", "low calorie", "non gmo", "keto friendly", "individually wrapped", "dairy free", "sugar free", "plant based", "kosher", "whole grain", "no artificial flavors"},
				types: []typeSpec{
					{query: "protein bar", label: "Protein Bar", leaf: "Nutrition Bars", nouns: []string{"protein", "bar"}, groups: []string{"flavor:snack", "count:pack"}, price: [2]float64{10, 40}},
					{query: "potato chips", label: "Kettle Potato Chips", leaf: "Chips & Crisps", nouns: []string{"potato", "chips"}, groups: []string{"flavor:snack", "size:weight"}, price: [2]float64{3, 25}},
					{query: "trail mix", label: "Trail Mix", leaf: "Trail Mix", nouns: []string{"trail", "mix"}, groups: []string{"size:weight", "count:pack"}, price: [2]float64{5, 30}},
					{query: "beef jerky", attrs: []string{"high protein", "low fat", "gluten free", "no msg", "grass fed", "individually wrapped", "keto friendly", "low sugar"}, label: "Beef Jerky", leaf: "Jerky & Dried Meats", nouns: []string{"beef", "jerky"}, groups: []string{"flavor:snack", "size:weight"}, price: [2]float64{7, 35}},
					{query: "sandwich cookies", label: "Sandwich Cookies", leaf: "Cookies", nouns: []string{"cookies"}, groups: []string{"flavor:snack", "count:pack"}, price: [2]float64{3, 20}},
				},
			},
			{
				name:  "Beverages",
				attrs: []string{"caffeine free", "zero sugar", "organic", "non gmo", "low calorie", "keto friendly", "natural ingredients", "no artificial sweeteners", "gluten free", "fair trade"},
				types: []typeSpec{
					{query: "green tea", label: "Green Tea Bags", leaf: "Tea", nouns: []string{"tea", "bags"}, groups: []string{"flavor:drink", "count:pack"}, price: [2]float64{4, 24}},
					{query: "ground coffee", label: "Ground Coffee", leaf: "Coffee", nouns: []string{"coffee"}, groups: []string{"flavor:drink", "size:weight"}, price: [2]float64{7, 30}},
					{query: "sparkling water", label: "Sparkling Water", leaf: "Water", nouns: []string{"water"}, groups: []string{"flavor:drink", "count:pack"}, price: [2]float64{5, 28}},
					{query: "energy drink", label: "Energy Drink", leaf: "Sports & Energy Drinks", nouns: []string{"energy", "drink"}, groups: []string{"flavor:drink", "count:pack"}, price: [2]float64{10, 45}},
				},
			},
			{
				name:  "Pantry Staples",
				attrs: []string{"organic", "non gmo", "gluten free", "low sodium", "kosher", "cold pressed", "no added sugar", "vegan", "raw unfiltered", "bpa free"},
				types: []typeSpec{
					{query: "olive oil", label: "Extra Virgin Olive Oil", leaf: "Oils", nouns: []string{"olive", "oil"}, groups: []string{"size:volume"}, price: [2]float64{8, 40}},
					{query: "pasta sauce", label: "Marinara Pasta Sauce", leaf: "Sauces", nouns: []string{"pasta", "sauce"}, groups: []string{"size:weight", "count:pack"}, price: [2]float64{4, 22}},
					{query: "peanut butter", label: "Creamy Peanut Butter", leaf: "Nut Butters", nouns: []string{"peanut", "butter"}, groups: []string{"size:weight", "count:pack"}, price: [2]float64{4, 20}},
					{query: "honey", label: "Wildflower Honey", leaf: "Honey", nouns: []string{"honey"}, groups: []string{"size:weight"}, price: [2]float64{6, 35}},
				},
			},
		},
	},
	{
		name:       "Clothing, Shoes & Jewelry",
		brands:     []string{"Northpeak", "Urbanloom", "Coastline", "Marlowe", "Stride Lab", "Kinsley", "Fable & Thread", "Ridgeway", "Aurelle", "Trailform"},
		adjectives: []string{"Casual", "Classic", "Vintage", "Stylish", "Comfortable", "Athletic", "Soft", "Trendy", "Essential", "Relaxed"},
		uses:       []string{"everyday wear", "work and weekends", "the gym and running errands", "travel and vacation", "layering in every season"},
		subs: []subcategorySpec{
			{
				name:  "Women",
				attrs: []string{"machine washable", "hand wash", "high waist", "elastic waistband", "polyester spandex", "long sleeve", "short sleeve", "button closure", "soft material", "stretch fabric", "pull on"},
				types: []typeSpec{
					{query: "women's maxi dress", label: "Women's Maxi Dress", leaf: "Dresses", nouns: []string{"women", "dress"}, groups: []string{"size:clothing", "color:apparel"}, price: [2]float64{18, 60}},
					{query: "yoga leggings", label: "Yoga Leggings for Women", leaf: "Leggings", nouns: []string{"yoga", "leggings", "women"}, groups: []string{"size:clothing", "color:apparel"}, price: [2]float64{14, 45}},
					{query: "cardigan sweater", label: "Women's Cardigan Sweater", leaf: "Sweaters", nouns: []string{"women", "cardigan", "sweater"}, groups: []string{"size:clothing", "color:apparel"}, price: [2]float64{20, 65}},
					{query: "women's blouse", label: "Women's Chiffon Blouse", leaf: "Tops & Tees", nouns: []string{"women", "chiffon", "blouse"}, groups: []string{"size:clothing", "color:apparel"}, price: [2]float64{15, 42}},
				},
			},
			{
				name:  "Men",
				attrs: []string{"machine washable", "moisture wicking", "quick drying", "slim fit", "relaxed fit", "cotton blend", "long sleeve", "short sleeve", "drawstring closure", "button closure", "wrinkle free"},
				types: []typeSpec{
					{query: "men's t-shirt", label: "Men's Crew Neck T-Shirt", leaf: "T-Shirts", nouns: []string{"men", "crew", "neck", "shirt"}, groups: []string{"size:clothing", "color:apparel", "style:cut"}, price: [2]float64{9, 30}},
					{query: "men's hoodie", label: "Men's Pullover Hoodie", leaf: "Hoodies", nouns: []string{"men", "pullover", "hoodie"}, groups: []string{"size:clothing", "color:apparel"}, price: [2]float64{22, 60}},
					{query: "cargo shorts", label: "Men's Cargo Shorts", leaf: "Shorts", nouns: []string{"men", "cargo", "shorts"}, groups: []string{"size:clothing", "color:apparel"}, price: [2]float64{16, 45}},
					{query: "dress shirt", label: "Men's Dress Shirt", leaf: "Dress Shirts", nouns: []string{"men", "dress", "shirt"}, groups: []string{"size:clothing", "color:apparel", "style:cut"}, price: [2]float64{20, 55}},
				},
			},
			{
				name:  "Shoes",
				attrs: []string{"non slip", "rubber sole", "memory foam", "lace up", "breathable mesh", "arch support", "lightweight", "slip on", "water resistant", "cushioned insole"},
				types: []typeSpec{
					{query: "running shoes", label: "Running Shoes", leaf: "Athletic Shoes", nouns: []string{"running", "shoes"}, groups: []string{"size:shoe", "color:apparel"}, price: [2]float64{30, 110}},
					{query: "ankle boots", label: "Ankle Boots", leaf: "Boots", nouns: []string{"ankle", "boots"}, groups: []string{"size:shoe", "color:apparel"}, price: [2]float64{35, 120}},
					{query: "house slippers", label: "House Slippers", leaf: "Slippers", nouns: []string{"house", "slippers"}, groups: []string{"size:clothing", "color:apparel"}, price: [2]float64{12, 40}},
					{query: "sport sandals", label: "Sport Sandals", leaf: "Sandals", nouns: []string{"sport", "sandals"}, groups: []string{"size:shoe", "color:apparel"}, price: [2]float64{18, 70}},
				},
			},
			{
				name:  "Accessories",
				attrs: []string{"adjustable strap", "water resistant", "lightweight", "genuine leather", "rfid blocking", "large capacity", "zipper closure", "uv protection", "easy to carry", "gift box"},
				types: []typeSpec{
					{query: "baseball cap", attrs: []string{"adjustable strap", "breathable", "uv protection", "cotton twill", "washed denim", "quick drying"}, label: "Baseball Cap", leaf: "Hats & Caps", nouns: []string{"baseball", "cap"}, groups: []string{"color:apparel"}, price: [2]float64{10, 32}},
					{query: "laptop backpack", attrs: []string{"water resistant", "large capacity", "usb charging port", "anti theft", "padded compartment", "lightweight"}, label: "Laptop Backpack", leaf: "Backpacks", nouns: []string{"laptop", "backpack"}, groups: []string{"color:apparel"}, price: [2]float64{25, 80}},
					{query: "leather wallet", attrs: []string{"genuine leather", "rfid blocking", "slim design", "gift box", "coin pocket", "id window"}, label: "Bifold Leather Wallet", leaf: "Wallets", nouns: []string{"leather", "wallet"}, groups: []string{"color:apparel"}, price: [2]float64{14, 55}},
					{query: "polarized sunglasses", attrs: []string{"uv protection", "polarized lens", "lightweight", "metal frame", "scratch resistant", "gift box"}, label: "Polarized Sunglasses", leaf: "Sunglasses", nouns: []string{"sunglasses"}, groups: []string{"color:apparel", "style:cut"}, price: [2]float64{12, 90}},
				},
			},
		},
	},
	{
		name:       "Electronics",
		brands:     []string{"Voltix", "Sonique", "Arcwave", "Nexlink", "Pulsar", "Quantex", "Zentro", "Brightcore", "Ampere One", "Lumatek"},
		adjectives: []string{"Portable", "Ultra", "Compact", "Smart", "Premium", "Pro", "Mini", "Advanced", "Slim", "Rugged"},
		uses:       []string{"work, travel and gaming", "the office and home", "commutes and workouts", "streaming and video calls", "students and professionals"},
		subs: []subcategorySpec{
			{
				name:  "Headphones & Speakers",
				attrs: []string{"noise cancelling", "long battery life", "fast charging", "water resistant", "hands free", "touch control", "deep bass", "built in microphone", "easy to carry", "stereo sound"},
				types: []typeSpec{
					{query: "wireless earbuds", label: "Wireless Earbuds", leaf: "Earbud Headphones", nouns: []string{"earbuds"}, groups: []string{"color:tech", "style:tech"}, price: [2]float64{18, 150}},
					{query: "bluetooth speaker", label: "Bluetooth Speaker", leaf: "Portable Speakers", nouns: []string{"bluetooth", "speaker"}, groups: []string{"color:tech"}, price: [2]float64{20, 130}},
					{query: "over ear headphones", label: "Over Ear Headphones", leaf: "Over-Ear Headphones", nouns: []string{"ear", "headphones"}, groups: []string{"color:tech", "style:tech"}, price: [2]float64{25, 200}},
				},
			},
			{
				name:  "Computer Accessories",
				attrs: []string{"plug and play", "usb c", "ergonomic design", "rechargeable battery", "aluminum alloy", "backlit keys", "high speed", "easy install", "adjustable height", "wireless connection"},
				types: []typeSpec{
					{query: "wireless mouse", attrs: []string{"ergonomic design", "rechargeable battery", "silent click", "plug and play", "wireless connection", "adjustable dpi"}, label: "Wireless Mouse", leaf: "Mice", nouns: []string{"mouse"}, groups: []string{"color:tech"}, price: [2]float64{10, 60}},
					{query: "mechanical keyboard", attrs: []string{"backlit keys", "hot swappable", "plug and play", "wireless connection", "anti ghosting", "ergonomic design", "rechargeable battery"}, label: "Mechanical Keyboard", leaf: "Keyboards", nouns: []string{"keyboard"}, groups: []string{"color:tech", "style:tech"}, price: [2]float64{30, 140}},
					{query: "usb c hub", attrs: []string{"plug and play", "4k hdmi", "high speed", "aluminum alloy", "power delivery", "compact size"}, label: "USB C Hub Adapter", leaf: "USB Hubs", nouns: []string{"usb", "hub", "adapter"}, groups: []string{"color:tech", "style:tech"}, price: [2]float64{15, 70}},
					{query: "laptop stand", attrs: []string{"adjustable height", "aluminum alloy", "foldable design", "heat dissipation", "non slip", "ergonomic design"}, label: "Laptop Stand", leaf: "Laptop Stands", nouns: []string{"laptop", "stand"}, groups: []string{"color:tech"}, price: [2]float64{15, 60}},
				},
			},
			{
				name:  "Cell Phone Accessories",
				attrs: []string{"fast charging", "shockproof", "wireless charging", "tempered glass", "ultra thin", "scratch resistant", "high speed", "easy install", "compact size", "led indicator"},
				types: []typeSpec{
					{query: "phone case", attrs: []string{"shockproof", "wireless charging compatible", "raised edges", "slim fit", "scratch resistant", "drop protection", "ultra thin"}, label: "Phone Case", leaf: "Cases", nouns: []string{"phone", "case"}, groups: []string{"size:phone", "color:tech"}, price: [2]float64{8, 40}},
					{query: "usb c cable", attrs: []string{"fast charging", "high speed", "braided nylon", "durable", "data sync", "tangle free"}, label: "USB C Charging Cable", leaf: "Cables", nouns: []string{"usb", "cable"}, groups: []string{"size:length", "color:tech", "count:pack"}, price: [2]float64{6, 25}},
					{query: "portable charger", attrs: []string{"fast charging", "large capacity", "led indicator", "compact size", "dual usb", "wireless charging"}, label: "Portable Charger Power Bank", leaf: "Power Banks", nouns: []string{"charger", "power", "bank"}, groups: []string{"color:tech"}, price: [2]float64{15, 70}},
					{query: "screen protector", attrs: []string{"tempered glass", "easy install", "bubble free", "case friendly", "scratch resistant", "ultra thin"}, label: "Screen Protector", leaf: "Screen Protectors", nouns: []string{"screen", "protector"}, groups: []string{"size:phone", "count:pack"}, price: [2]float64{6, 20}},
				},
			},
			{
				name:  "Television & Video",
				attrs: []string{"high definition", "easy install", "heavy duty", "high speed", "gold plated", "4k ultra hd", "voice control", "dolby vision", "wall mount", "energy efficient"},
				types: []typeSpec{
					{query: "hdmi cable", attrs: []string{"high speed", "gold plated", "4k ultra hd", "braided nylon", "ethernet", "high definition"}, label: "HDMI Cable", leaf: "HDMI Cables", nouns: []string{"hdmi", "cable"}, groups: []string{"size:length", "count:pack"}, price: [2]float64{6, 30}},
					{query: "tv wall mount", attrs: []string{"heavy duty", "easy install", "full motion", "tilt swivel", "wall mount", "weight capacity"}, label: "TV Wall Mount Bracket", leaf: "TV Mounts", nouns: []string{"tv", "wall", "mount", "bracket"}, groups: []string{"size:screen"}, price: [2]float64{20, 90}},
					{query: "streaming stick", attrs: []string{"4k ultra hd", "voice control", "dolby vision", "easy setup", "high definition", "energy efficient"}, label: "Streaming Media Stick", leaf: "Streaming Media Players", nouns: []string{"streaming", "media", "stick"}, groups: []string{"style:tech"}, price: [2]float64{25, 80}},
				},
			},
		},
	},
	{
		name:       "Home & Kitchen",
		brands:     []string{"Oakhaven", "Casa Verde", "Nestwell", "Homely", "Greenthumb", "Ironleaf", "Linenly", "Cedar & Co", "Hearthstone", "Willow Lane"},
		adjectives: []string{"Modern", "Rustic", "Premium", "Durable", "Elegant", "Compact", "Classic", "Cozy", "Minimalist", "Sturdy"},
		uses:       []string{"the kitchen and dining room", "living rooms and bedrooms", "small apartments", "patios and gardens", "everyday family use"},
		subs: []subcategorySpec{
			{
				name:  "Kitchen & Dining",
				attrs: []string{"dishwasher safe", "bpa free", "stainless steel", "easy clean", "non stick", "oven safe", "microwave safe", "heat resistant", "food grade", "leak proof"},
				types: []typeSpec{
					{query: "frying pan", label: "Nonstick Frying Pan", leaf: "Skillets", nouns: []string{"frying", "pan"}, groups: []string{"size:pan"}, price: [2]float64{15, 70}},
					{query: "chef knife", attrs: []string{"high carbon", "stainless steel", "ergonomic handle", "razor sharp", "full tang", "gift box"}, label: "Chef Knife", leaf: "Chef's Knives", nouns: []string{"chef", "knife"}, groups: []string{"size:pan", "style:home"}, price: [2]float64{15, 90}},
					{query: "coffee mug", label: "Ceramic Coffee Mug", leaf: "Mugs", nouns: []string{"coffee", "mug"}, groups: []string{"color:home", "count:set"}, price: [2]float64{8, 30}},
					{query: "food storage containers", label: "Food Storage Containers", leaf: "Food Storage", nouns: []string{"food", "storage", "containers"}, groups: []string{"count:set"}, price: [2]float64{12, 45}},
					{query: "cutting board", attrs: []string{"juice groove", "non slip", "eco friendly", "easy clean", "reversible", "dishwasher safe"}, label: "Bamboo Cutting Board", leaf: "Cutting Boards", nouns: []string{"cutting", "board"}, groups: []string{"size:furniture", "count:set"}, price: [2]float64{10, 45}},
				},
			},
			{
				name:  "Bedding",
				attrs: []string{"machine washable", "super soft", "breathable fabric", "hypoallergenic", "deep pocket", "wrinkle resistant", "memory foam", "cooling gel", "fade resistant", "easy care"},
				types: []typeSpec{
					{query: "bed sheet set", label: "Bed Sheet Set", leaf: "Sheet & Pillowcase Sets", nouns: []string{"bed", "sheet", "set"}, groups: []string{"size:bed", "color:home"}, price: [2]float64{20, 80}},
					{query: "throw pillow covers", label: "Throw Pillow Covers", leaf: "Throw Pillow Covers", nouns: []string{"pillow", "covers"}, groups: []string{"color:home", "count:set"}, price: [2]float64{9, 35}},
					{query: "weighted blanket", label: "Weighted Blanket", leaf: "Blankets", nouns: []string{"blanket"}, groups: []string{"size:bed", "color:home"}, price: [2]float64{30, 110}},
					{query: "memory foam pillow", label: "Memory Foam Pillow", leaf: "Bed Pillows", nouns: []string{"memory", "foam", "pillow"}, groups: []string{"size:bed", "count:set"}, price: [2]float64{20, 70}},
				},
			},
			{
				name:  "Furniture",
				attrs: []string{"easy assemble", "solid wood", "space saving", "heavy duty", "metal frame", "storage space", "living room", "height adjustable", "engineered wood", "weight capacity"},
				types: []typeSpec{
					{query: "bar stools", label: "Counter Height Bar Stools", leaf: "Barstools", nouns: []string{"bar", "stools"}, groups: []string{"size:furniture", "color:home", "count:set"}, price: [2]float64{60, 220}},
					{query: "bookshelf", label: "5 Tier Bookshelf", leaf: "Bookcases", nouns: []string{"tier", "bookshelf"}, groups: []string{"color:home", "style:home"}, price: [2]float64{40, 180}},
					{query: "office chair", label: "Ergonomic Office Chair", leaf: "Home Office Chairs", nouns: []string{"office", "chair"}, groups: []string{"color:home"}, price: [2]float64{60, 250}},
					{query: "nightstand", label: "Nightstand with Drawer", leaf: "Nightstands", nouns: []string{"nightstand", "drawer"}, groups: []string{"color:home", "style:home", "count:set"}, price: [2]float64{30, 140}},
				},
			},
			{
				name:  "Patio, Lawn & Garden",
				attrs: []string{"weather resistant", "rust resistant", "solar powered", "easy install", "eco friendly", "uv resistant", "heavy duty", "drainage hole", "auto on off", "kink free"},
				types: []typeSpec{
					{query: "garden hose", label: "Expandable Garden Hose", leaf: "Garden Hoses", nouns: []string{"garden", "hose"}, groups: []string{"size:length", "color:home"}, price: [2]float64{18, 70}},
					{query: "solar lights", label: "Solar Pathway Lights", leaf: "Pathway Lights", nouns: []string{"solar", "pathway", "lights"}, groups: []string{"count:pack", "color:home"}, price: [2]float64{15, 60}},
					{query: "planter pots", label: "Ceramic Planter Pots", leaf: "Planters", nouns: []string{"planter", "pots"}, groups: []string{"size:furniture", "color:home", "count:set"}, price: [2]float64{12, 55}},
					{query: "bird feeder", label: "Hanging Bird Feeder", leaf: "Bird Feeders", nouns: []string{"bird", "feeder"}, groups: []string{"color:home", "style:home"}, price: [2]float64{12, 50}},
				},
			},
		},
	},
}

// titleTemplates build a product title from brand (%[1]s), adjective
// (%[2]s), type label (%[3]s) and two title-cased attributes (%[4]s, %[5]s),
// mimicking the keyword-stuffed titles of real listings.
var titleTemplates = []string{
	"%[1]s %[2]s %[3]s - %[4]s, %[5]s",
	"%[1]s %[3]s, %[2]s %[4]s Design",
	"%[2]s %[3]s by %[1]s | %[4]s | %[5]s",
	"%[1]s %[3]s %[4]s %[2]s",
	"%[1]s %[2]s %[4]s %[3]s (%[5]s)",
}

// descriptionTemplates: brand, label (lower-case), attribute list, use,
// adjective (lower-case). Attribute phrases mix adjectives ("long lasting")
// and nouns ("argan oil"), so they are listed rather than predicated.
var descriptionTemplates = []string{
	"The %[1]s %[2]s, designed for %[4]s. Highlights: %[3]s. The %[5]s pick you will reach for again and again.",
	"Meet the %[5]s %[2]s from %[1]s. Key features: %[3]s. Ready for %[4]s.",
	"%[1]s makes this %[2]s for %[4]s, with these qualities: %[3]s. Quality checked and backed by friendly support.",
	"Why choose this %[2]s from %[1]s? Because of %[3]s. Perfect for %[4]s, with the %[5]s look customers love.",
}

// bulletTemplates turn one attribute (upper-cased as %[1]s, plain as %[2]s)
// and the label (%[3]s) into a feature bullet.
var bulletTemplates = []string{
	"%[1]s - %[2]s, so you can use this %[3]s with confidence every day",
	"%[1]s: %[2]s, made to last",
	"%[1]s | thoughtfully designed around %[2]s without compromise",
	"%[1]s - the reason customers choose this %[3]s: %[2]s",
}

// closingBullets end a product's feature list.
var closingBullets = []string{
	"SATISFACTION GUARANTEED - contact us anytime and we will make it right",
	"WHAT YOU GET - %s as shown, carefully packed for safe delivery",
	"GREAT GIFT IDEA - a thoughtful present for family and friends",
	"QUALITY FIRST - every unit is inspected before it ships",
}

var reviewTitles = []string{"Great value", "Works as described", "Not bad", "Love it", "Would buy again", "Decent for the price", "Exceeded my expectations", "Just okay"}

var reviewBodies = []string{
	"I bought this %s for my family and we use it every day.",
	"The %s arrived quickly and looks just like the pictures.",
	"Good %s overall, though shipping took a little longer than expected.",
	"This %s is exactly what I needed. Five stars from me.",
	"Nice quality %s, I would recommend it to a friend.",
}

// instructionTemplates phrase a synthetic goal's base text (WebShop's
// per-product instruction_text) from the attributes (%[1]s, already joined)
// and the product type query (%[2]s). They are lower-case like WebShop's.
var instructionTemplates = []string{
	"i'm looking for %[1]s %[2]s",
	"i need %[2]s, %[1]s",
	"find me %[1]s %[2]s",
	"i want to buy %[2]s that is %[1]s",
	"get me some %[1]s %[2]s",
	"i am searching for %[1]s %[2]s",
	"show me %[2]s that's %[1]s",
	"i would like %[1]s %[2]s",
}

// stopwords are dropped by the search tokenizer: a short English list in the
// spirit of Lucene's default English stop set, so that "i need a ..." in a
// query does not match every description.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true,
	"by": true, "for": true, "if": true, "in": true, "into": true, "is": true, "it": true, "no": true,
	"not": true, "of": true, "on": true, "or": true, "such": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "they": true, "this": true, "to": true,
	"was": true, "will": true, "with": true, "i": true, "me": true, "my": true, "you": true, "we": true,
	"need": true, "want": true, "looking": true, "find": true, "buy": true, "get": true, "can": true,
	"am": true, "which": true, "would": true, "like": true, "show": true, "searching": true, "m": true,
	"s": true,
}
