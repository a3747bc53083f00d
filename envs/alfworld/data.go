package alfworld

// TaskType is one of ALFWorld's six task types.
type TaskType int

// ALFWorld's task types, in its order.
const (
	PickAndPlace    TaskType = iota // put a X in Y
	LookInLight                     // look at X under the lamp
	CleanAndPlace                   // put a clean X in Y
	HeatAndPlace                    // put a hot X in Y
	CoolAndPlace                    // put a cool X in Y
	PickTwoAndPlace                 // put two X in Y
	numTaskTypes
)

// taskTypeNames are ALFWorld's names of the task types (its data set's
// directory prefixes), which the config's task_types key uses.
var taskTypeNames = [numTaskTypes]string{
	"pick_and_place_simple",
	"look_at_obj_in_light",
	"pick_clean_then_place_in_recep",
	"pick_heat_then_place_in_recep",
	"pick_cool_then_place_in_recep",
	"pick_two_obj_and_place",
}

// String is ALFWorld's name of the task type.
func (t TaskType) String() string {
	if t < 0 || t >= numTaskTypes {
		return "TaskType(?)"
	}
	return taskTypeNames[t]
}

// ParseTaskType reads one of ALFWorld's task type names.
func ParseTaskType(s string) (TaskType, bool) {
	for i, n := range taskTypeNames {
		if s == n {
			return TaskType(i), true
		}
	}
	return 0, false
}

// goalTemplates are ALFWorld's two phrasings of each task type's goal:
// %[1]s is the object kind, %[2]s the receptacle kind or the lamp.
var goalTemplates = [numTaskTypes][2]string{
	{"put a %[1]s in %[2]s.", "put some %[1]s on %[2]s."},
	{"look at %[1]s under the %[2]s.", "examine the %[1]s with the %[2]s."},
	{"put a clean %[1]s in %[2]s.", "clean some %[1]s and put it in %[2]s."},
	{"put a hot %[1]s in %[2]s.", "heat some %[1]s and put it in %[2]s."},
	{"put a cool %[1]s in %[2]s.", "cool some %[1]s and put it in %[2]s."},
	{"put two %[1]s in %[2]s.", "find two %[1]s and put them in %[2]s."},
}

// appliance is the receptacle kind a task type needs to change its object
// ("" for none).
var appliance = [numTaskTypes]string{CleanAndPlace: "sinkbasin", HeatAndPlace: "microwave", CoolAndPlace: "fridge"}

// Object properties: what may be done to a kind of object.
const (
	canClean = 1 << iota
	canHeat
	canCool
	canLook // examined under a lamp
)

// objectKind describes a kind of object in one room: where it is found,
// likeliest first (the expert searches in this order), and what may be
// done to it.
type objectKind struct {
	name  string
	found []string
	props int
}

// recKind describes a kind of receptacle in one room: how many a full and
// a small scene have (inclusive ranges) and whether it opens.
type recKind struct {
	name     string
	full     [2]int
	small    [2]int
	openable bool
}

// room is one of ALFWorld's four kinds of scene.
type room struct {
	name    string
	recs    []recKind
	objects []objectKind
	// lamp is the kind of lamp the room has ("" for none) and lampAt the
	// receptacle kinds it stands at.
	lamp   string
	lampAt []string
}

// rooms are the four scene kinds with ALFWorld's receptacles and objects
// (a subset of each, with the ALFRED placements that make the six task
// types possible).
var rooms = []room{
	{
		name: "kitchen",
		recs: []recKind{
			{"cabinet", [2]int{3, 6}, [2]int{1, 2}, true},
			{"coffeemachine", [2]int{1, 1}, [2]int{0, 1}, false},
			{"countertop", [2]int{1, 3}, [2]int{1, 1}, false},
			{"diningtable", [2]int{1, 1}, [2]int{1, 1}, false},
			{"drawer", [2]int{2, 4}, [2]int{1, 1}, true},
			{"fridge", [2]int{1, 1}, [2]int{1, 1}, true},
			{"garbagecan", [2]int{1, 1}, [2]int{1, 1}, false},
			{"microwave", [2]int{1, 1}, [2]int{1, 1}, true},
			{"shelf", [2]int{0, 2}, [2]int{0, 1}, false},
			{"sinkbasin", [2]int{1, 1}, [2]int{1, 1}, false},
			{"stoveburner", [2]int{2, 4}, [2]int{1, 1}, false},
			{"toaster", [2]int{1, 1}, [2]int{0, 0}, false},
		},
		objects: []objectKind{
			{"apple", []string{"countertop", "diningtable", "fridge", "garbagecan"}, canClean | canHeat | canCool},
			{"bowl", []string{"cabinet", "countertop", "diningtable", "fridge", "shelf"}, canClean | canCool},
			{"bread", []string{"countertop", "diningtable", "fridge", "cabinet"}, canHeat | canCool},
			{"butterknife", []string{"countertop", "diningtable", "drawer"}, canClean},
			{"cup", []string{"cabinet", "countertop", "diningtable", "fridge", "shelf"}, canClean | canHeat | canCool},
			{"dishsponge", []string{"sinkbasin", "countertop", "cabinet", "drawer"}, canClean},
			{"egg", []string{"fridge", "countertop", "diningtable", "garbagecan"}, canClean | canHeat | canCool},
			{"fork", []string{"drawer", "countertop", "diningtable", "sinkbasin"}, canClean},
			{"kettle", []string{"stoveburner", "countertop", "cabinet"}, canClean},
			{"knife", []string{"countertop", "diningtable", "drawer"}, canClean},
			{"ladle", []string{"drawer", "countertop", "diningtable"}, canClean},
			{"lettuce", []string{"fridge", "countertop", "diningtable"}, canClean | canCool},
			{"mug", []string{"coffeemachine", "cabinet", "countertop", "diningtable", "sinkbasin", "shelf"}, canClean | canHeat | canCool},
			{"pan", []string{"stoveburner", "countertop", "cabinet"}, canClean | canCool},
			{"peppershaker", []string{"countertop", "diningtable", "cabinet", "shelf"}, 0},
			{"plate", []string{"cabinet", "countertop", "diningtable", "fridge"}, canClean | canHeat | canCool},
			{"pot", []string{"stoveburner", "countertop", "cabinet"}, canClean | canCool},
			{"potato", []string{"fridge", "countertop", "diningtable", "garbagecan"}, canClean | canHeat | canCool},
			{"saltshaker", []string{"countertop", "diningtable", "cabinet", "shelf"}, 0},
			{"soapbottle", []string{"countertop", "sinkbasin", "cabinet"}, 0},
			{"spatula", []string{"drawer", "countertop", "diningtable"}, canClean},
			{"spoon", []string{"drawer", "countertop", "diningtable", "sinkbasin"}, canClean},
			{"tomato", []string{"fridge", "countertop", "diningtable", "garbagecan"}, canClean | canHeat | canCool},
		},
	},
	{
		name: "bathroom",
		recs: []recKind{
			{"bathtubbasin", [2]int{1, 1}, [2]int{0, 1}, false},
			{"cabinet", [2]int{2, 4}, [2]int{1, 2}, true},
			{"countertop", [2]int{1, 1}, [2]int{1, 1}, false},
			{"drawer", [2]int{1, 4}, [2]int{0, 1}, true},
			{"garbagecan", [2]int{1, 1}, [2]int{1, 1}, false},
			{"handtowelholder", [2]int{1, 2}, [2]int{0, 1}, false},
			{"shelf", [2]int{0, 3}, [2]int{0, 1}, false},
			{"sinkbasin", [2]int{1, 2}, [2]int{1, 1}, false},
			{"toilet", [2]int{1, 1}, [2]int{1, 1}, false},
			{"toiletpaperhanger", [2]int{1, 1}, [2]int{1, 1}, false},
			{"towelholder", [2]int{1, 1}, [2]int{0, 1}, false},
		},
		objects: []objectKind{
			{"candle", []string{"countertop", "toilet", "cabinet", "shelf"}, 0},
			{"cloth", []string{"cabinet", "countertop", "bathtubbasin", "drawer"}, canClean},
			{"dishsponge", []string{"countertop", "cabinet", "toilet"}, canClean},
			{"handtowel", []string{"handtowelholder"}, 0},
			{"soapbar", []string{"countertop", "bathtubbasin", "sinkbasin", "toilet", "cabinet"}, canClean},
			{"soapbottle", []string{"countertop", "toilet", "cabinet", "shelf"}, 0},
			{"spraybottle", []string{"toilet", "countertop", "cabinet"}, 0},
			{"tissuebox", []string{"toilet", "countertop", "shelf"}, 0},
			{"toiletpaper", []string{"toiletpaperhanger", "toilet", "countertop", "cabinet"}, 0},
			{"towel", []string{"towelholder"}, 0},
		},
	},
	{
		name: "bedroom",
		recs: []recKind{
			{"bed", [2]int{1, 1}, [2]int{1, 1}, false},
			{"desk", [2]int{1, 1}, [2]int{1, 1}, false},
			{"drawer", [2]int{2, 6}, [2]int{1, 2}, true},
			{"dresser", [2]int{1, 1}, [2]int{0, 1}, false},
			{"garbagecan", [2]int{1, 1}, [2]int{1, 1}, false},
			{"laundryhamper", [2]int{0, 1}, [2]int{0, 0}, false},
			{"safe", [2]int{0, 1}, [2]int{0, 1}, true},
			{"shelf", [2]int{1, 4}, [2]int{1, 1}, false},
			{"sidetable", [2]int{1, 2}, [2]int{1, 1}, false},
		},
		objects: []objectKind{
			{"alarmclock", []string{"desk", "dresser", "sidetable", "shelf"}, canLook},
			{"book", []string{"bed", "desk", "dresser", "sidetable", "shelf"}, canLook},
			{"bowl", []string{"desk", "shelf"}, canLook},
			{"cd", []string{"desk", "drawer", "shelf", "sidetable", "garbagecan", "safe"}, canLook},
			{"cellphone", []string{"bed", "desk", "drawer", "dresser", "sidetable"}, canLook},
			{"creditcard", []string{"desk", "drawer", "dresser", "sidetable", "shelf", "safe"}, canLook},
			{"keychain", []string{"dresser", "desk", "drawer", "sidetable", "shelf", "safe"}, canLook},
			{"laptop", []string{"bed", "desk"}, canLook},
			{"mug", []string{"desk", "shelf"}, canLook},
			{"pen", []string{"desk", "drawer", "dresser", "shelf", "sidetable"}, canLook},
			{"pencil", []string{"desk", "drawer", "dresser", "shelf", "sidetable"}, canLook},
			{"pillow", []string{"bed", "dresser"}, canLook},
		},
		lamp:   "desklamp",
		lampAt: []string{"desk", "sidetable", "dresser"},
	},
	{
		name: "livingroom",
		recs: []recKind{
			{"armchair", [2]int{1, 2}, [2]int{1, 1}, false},
			{"cabinet", [2]int{0, 4}, [2]int{0, 1}, true},
			{"coffeetable", [2]int{1, 1}, [2]int{1, 1}, false},
			{"diningtable", [2]int{0, 1}, [2]int{0, 0}, false},
			{"drawer", [2]int{1, 4}, [2]int{1, 1}, true},
			{"garbagecan", [2]int{1, 1}, [2]int{1, 1}, false},
			{"shelf", [2]int{1, 4}, [2]int{1, 1}, false},
			{"sidetable", [2]int{1, 2}, [2]int{1, 1}, false},
			{"sofa", [2]int{1, 1}, [2]int{1, 1}, false},
			{"tvstand", [2]int{1, 1}, [2]int{0, 1}, false},
		},
		objects: []objectKind{
			{"book", []string{"coffeetable", "shelf", "sofa", "diningtable"}, canLook},
			{"box", []string{"coffeetable", "sidetable", "shelf", "sofa"}, canLook},
			{"creditcard", []string{"coffeetable", "sidetable", "drawer", "shelf", "sofa"}, canLook},
			{"keychain", []string{"coffeetable", "sidetable", "drawer", "shelf"}, canLook},
			{"laptop", []string{"sofa", "coffeetable", "armchair"}, canLook},
			{"newspaper", []string{"sofa", "armchair", "coffeetable", "sidetable"}, canLook},
			{"pillow", []string{"sofa", "armchair"}, canLook},
			{"remotecontrol", []string{"sofa", "armchair", "coffeetable", "sidetable", "tvstand"}, canLook},
			{"statue", []string{"coffeetable", "shelf", "sidetable", "tvstand", "cabinet"}, canLook},
			{"tissuebox", []string{"coffeetable", "sidetable", "shelf"}, canLook},
			{"vase", []string{"shelf", "coffeetable", "sidetable", "tvstand", "cabinet"}, canLook},
			{"watch", []string{"coffeetable", "drawer", "sidetable", "shelf"}, canLook},
		},
		lamp:   "floorlamp",
		lampAt: []string{"sidetable", "armchair", "sofa"},
	},
}

// unseenPairs are the (room, object kind) combinations held out of the
// seen split: a task of the unseen split always asks for one of them, a
// task of the seen split never does. Every task type has objects on both
// sides (heat: tomato and mug unseen; look: cellphone, pen, remotecontrol
// and vase; clean: soapbar among others).
var unseenPairs = map[string][]string{
	"kitchen":    {"mug", "pan", "tomato"},
	"bathroom":   {"candle", "soapbar"},
	"bedroom":    {"cellphone", "pen"},
	"livingroom": {"remotecontrol", "vase"},
}

func isUnseen(roomName, object string) bool {
	for _, o := range unseenPairs[roomName] {
		if o == object {
			return true
		}
	}
	return false
}

// needs is the object property a task type requires.
var needs = [numTaskTypes]int{CleanAndPlace: canClean, HeatAndPlace: canHeat, CoolAndPlace: canCool, LookInLight: canLook}
